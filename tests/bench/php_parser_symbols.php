<?php
// Reference extraction for bench_codegraph_accuracy.py, with nikic/php-parser (Debian `php-parser`).
// Usage: php php_parser_symbols.php ROOT < list-of-relative-paths
// Prints one JSON object a line: {"t":"def","kind","fqn","path","line"} and {"t":"call","name","path","line"};
// files php-parser cannot parse are reported as {"t":"error","path","message"}.

require '/usr/share/php/PhpParser/autoload.php';

use PhpParser\Node;
use PhpParser\NodeTraverser;
use PhpParser\NodeVisitor\NameResolver;
use PhpParser\NodeVisitorAbstract;
use PhpParser\ParserFactory;

final class Collector extends NodeVisitorAbstract
{
    /** @var list<?string> enclosing class-likes; null for an anonymous class */
    private array $classes = [];
    public string $path = '';

    private function out(array $row): void
    {
        echo json_encode($row + ['path' => $this->path], JSON_UNESCAPED_SLASHES), "\n";
    }

    private function def(string $kind, string $fqn, int $line): void
    {
        $this->out(['t' => 'def', 'kind' => $kind, 'fqn' => $fqn, 'line' => $line]);
    }

    private function call(string $name, int $line): void
    {
        $this->out(['t' => 'call', 'name' => strtolower($name), 'line' => $line]);
    }

    public function enterNode(Node $node)
    {
        $class = $this->classes ? end($this->classes) : false;
        if ($node instanceof Node\Stmt\ClassLike) {
            $kinds = [Node\Stmt\Class_::class => 'class', Node\Stmt\Interface_::class => 'interface',
                      Node\Stmt\Trait_::class => 'trait', Node\Stmt\Enum_::class => 'enum'];
            $fqn = $node->name === null ? null : $node->namespacedName->toString();
            if ($fqn !== null) {
                $this->def($kinds[get_class($node)], $fqn, $node->getStartLine());
            }
            $this->classes[] = $fqn;
        } elseif ($node instanceof Node\Stmt\ClassMethod && is_string($class)) {
            $this->def('method', "$class::{$node->name}", $node->getStartLine());
            if ($node->name->toLowerString() === '__construct') {
                foreach ($node->params as $param) {
                    if ($param->flags !== 0) {
                        $this->def('property', "$class::\${$param->var->name}", $param->getStartLine());
                    }
                }
            }
        } elseif ($node instanceof Node\Stmt\Property && is_string($class)) {
            foreach ($node->props as $prop) {
                $this->def('property', "$class::\${$prop->name}", $prop->getStartLine());
            }
        } elseif ($node instanceof Node\Stmt\ClassConst && is_string($class)) {
            foreach ($node->consts as $const) {
                $this->def('constant', "$class::{$const->name}", $const->getStartLine());
            }
        } elseif ($node instanceof Node\Stmt\EnumCase && is_string($class)) {
            $this->def('enum_case', "$class::{$node->name}", $node->getStartLine());
        } elseif ($node instanceof Node\Stmt\Const_) {
            foreach ($node->consts as $const) {
                $this->def('constant', $const->namespacedName->toString(), $const->getStartLine());
            }
        } elseif ($node instanceof Node\Stmt\Function_) {
            $this->def('function', $node->namespacedName->toString(), $node->getStartLine());
        } elseif ($node instanceof Node\Expr\MethodCall || $node instanceof Node\Expr\NullsafeMethodCall
            || $node instanceof Node\Expr\StaticCall) {
            if ($node->name instanceof Node\Identifier) {
                $this->call($node->name->toString(), $node->name->getStartLine());
            }
        } elseif ($node instanceof Node\Expr\FuncCall) {
            if ($node->name instanceof Node\Name) {
                $this->call($node->name->getLast(), $node->name->getStartLine());
            }
        } elseif ($node instanceof Node\Expr\New_) {
            if (!$node->class instanceof Node\Stmt\Class_) {  // `new X` and `new $class`, not `new class {}`
                $this->call('__construct', $node->getStartLine());
            }
        }
        return null;
    }

    public function leaveNode(Node $node)
    {
        if ($node instanceof Node\Stmt\ClassLike) {
            array_pop($this->classes);
        }
        return null;
    }
}

$root = rtrim($argv[1], '/');
$parser = (new ParserFactory())->create(ParserFactory::PREFER_PHP7);
$collector = new Collector();
$traverser = new NodeTraverser();
$traverser->addVisitor(new NameResolver());
$traverser->addVisitor($collector);
while (($line = fgets(STDIN)) !== false) {
    $path = rtrim($line, "\n");
    if ($path === '') {
        continue;
    }
    $collector->path = $path;
    try {
        $traverser->traverse($parser->parse(file_get_contents("$root/$path")));
    } catch (PhpParser\Error $e) {
        echo json_encode(['t' => 'error', 'path' => $path, 'message' => $e->getMessage()]), "\n";
    }
}
