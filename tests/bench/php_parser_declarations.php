<?php
// Reference declarations for bench_memory_real.py's entry-point oracle, with nikic/php-parser (Debian
// `php-parser`), independent of the tree-sitter reader under test.
// Usage: php php_parser_declarations.php < list-of-file-paths
// Prints one JSON object a line: {"file", "kind", "fqn", "start", "end"} (start includes the doc comment;
// a property or constant statement declaring several names gives each its own lines), or
// {"file", "error"} for a file php-parser cannot parse.

require '/usr/share/php/PhpParser/autoload.php';

use PhpParser\Node;
use PhpParser\NodeTraverser;
use PhpParser\NodeVisitor\NameResolver;
use PhpParser\NodeVisitorAbstract;
use PhpParser\ParserFactory;

final class Declarations extends NodeVisitorAbstract
{
    /** @var list<?string> enclosing class-likes; null for an anonymous class */
    private array $classes = [];
    /** @var int how many functions or methods enclose the node */
    private int $functions = 0;
    public string $file = '';

    private function out(string $kind, string $fqn, Node $node, ?Node $range = null): void
    {
        $range ??= $node;
        $start = $range->getStartLine();
        $doc = $node->getDocComment();
        if ($doc !== null && $range === $node) {
            $start = min($start, $doc->getStartLine());
        }
        echo json_encode(['file' => $this->file, 'kind' => $kind, 'fqn' => $fqn, 'start' => $start,
                          'end' => $range->getEndLine()], JSON_UNESCAPED_SLASHES), "\n";
    }

    public function enterNode(Node $node)
    {
        $class = $this->classes ? end($this->classes) : false;
        if ($node instanceof Node\Stmt\ClassLike) {
            $kinds = [Node\Stmt\Class_::class => 'class', Node\Stmt\Interface_::class => 'interface',
                      Node\Stmt\Trait_::class => 'trait', Node\Stmt\Enum_::class => 'enum'];
            $fqn = $node->name === null ? null : $node->namespacedName->toString();
            if ($fqn !== null && $this->functions === 0) {
                $this->out($kinds[get_class($node)], $fqn, $node);
            }
            $this->classes[] = $this->functions === 0 ? $fqn : null;
        } elseif ($node instanceof Node\Stmt\ClassMethod) {
            if (is_string($class) && $this->functions === 0) {
                $this->out('method', "$class::{$node->name}", $node);
            }
            $this->functions++;
        } elseif ($node instanceof Node\Stmt\Function_) {
            if ($this->functions === 0) {
                $this->out('function', $node->namespacedName->toString(), $node);
            }
            $this->functions++;
        } elseif ($this->functions > 0 || !is_string($class)) {
            if ($node instanceof Node\Stmt\Const_ && $this->functions === 0 && $class === false) {
                $this->many('constant', $node, $node->consts, fn($c) => $c->namespacedName->toString());
            }
        } elseif ($node instanceof Node\Stmt\Property) {
            $this->many('property', $node, $node->props, fn($p) => "$class::\${$p->name}");
        } elseif ($node instanceof Node\Stmt\ClassConst) {
            $this->many('constant', $node, $node->consts, fn($c) => "$class::{$c->name}");
        } elseif ($node instanceof Node\Stmt\EnumCase) {
            $this->out('enum_case', "$class::{$node->name}", $node);
        }
        return null;
    }

    private function many(string $kind, Node $statement, array $elements, callable $name): void
    {
        if (count($elements) === 1) {
            $this->out($kind, $name($elements[0]), $statement);
            return;
        }
        foreach ($elements as $index => $element) {  // each name its own lines; the rest goes to the first
            $this->out($kind, $name($element), $statement, $index === 0 ? $statement : $element);
        }
    }

    public function leaveNode(Node $node)
    {
        if ($node instanceof Node\Stmt\ClassLike) {
            array_pop($this->classes);
        } elseif ($node instanceof Node\Stmt\ClassMethod || $node instanceof Node\Stmt\Function_) {
            $this->functions--;
        }
        return null;
    }
}

$parser = (new ParserFactory())->create(ParserFactory::PREFER_PHP7);
$visitor = new Declarations();
$traverser = new NodeTraverser();
$traverser->addVisitor(new NameResolver());
$traverser->addVisitor($visitor);
while (($line = fgets(STDIN)) !== false) {
    $file = rtrim($line, "\n");
    if ($file === '') {
        continue;
    }
    $visitor->file = $file;
    try {
        $traverser->traverse($parser->parse(file_get_contents($file)));
    } catch (Throwable $e) {
        echo json_encode(['file' => $file, 'error' => $e->getMessage()]), "\n";
    }
}
