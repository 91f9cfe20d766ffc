<?php
// Reports the class-like and function names a PHP file refers to, resolved with nikic/php-parser's
// NameResolver, and which of them do not exist once the workspace's autoloader is loaded.
// Usage: php symbols.php BOOTSTRAP|- FILE...   (output: one JSON object per file, a line each)
require_once 'PhpParser/autoload.php';

use PhpParser\Node;
use PhpParser\NodeTraverser;
use PhpParser\NodeVisitor\NameResolver;
use PhpParser\NodeVisitorAbstract;
use PhpParser\ParserFactory;

final class NameCollector extends NodeVisitorAbstract
{
    public array $classes = [];
    public array $functions = [];

    public function enterNode(Node $node)
    {
        if ($node instanceof Node\Expr\FuncCall && $node->name instanceof Node\Name) {
            $ns = $node->name->getAttribute('namespacedName');
            $this->functions[] = [$ns ? $ns->toString() : $node->name->toString(), $node->name->toString(), $node->getLine()];
            $node->name->setAttribute('notAClass', true);
            return null;
        }
        if ($node instanceof Node\Expr\ConstFetch) {
            $node->name->setAttribute('notAClass', true);  // constants fall back to the global namespace
            return null;
        }
        if ($node instanceof Node\Name && !$node->getAttribute('notAClass') && !$node->isSpecialClassName()
            && $node->hasAttribute('resolvedName')) {
            $resolved = $node->getAttribute('resolvedName');
            if ($resolved instanceof Node\Name\FullyQualified) {
                $this->classes[] = [$resolved->toString(), $node->getLine()];
            }
        }
        return null;
    }
}

$bootstrap = $argv[1];
$files = array_slice($argv, 2);
$parser = (new ParserFactory())->create(ParserFactory::PREFER_PHP7);
$collected = [];
foreach ($files as $file) {
    $traverser = new NodeTraverser();
    $traverser->addVisitor(new NameResolver(null, ['replaceNodes' => false]));
    $collector = new NameCollector();
    $traverser->addVisitor($collector);
    try {
        $traverser->traverse($parser->parse(file_get_contents($file)));
        $collected[$file] = $collector;
    } catch (PhpParser\Error $e) {
        $collected[$file] = null;  // a syntax error is reported by `php -l`, not here
    }
}
if ($bootstrap !== '-') {
    require_once $bootstrap;
}
foreach ($collected as $file => $collector) {
    $names = [];
    $unresolved = [];
    foreach ($collector ? $collector->classes : [] as [$name, $line]) {
        $names[] = $name;
        if ($bootstrap !== '-' && !class_exists($name) && !interface_exists($name) && !trait_exists($name)
            && !(function_exists('enum_exists') && enum_exists($name))) {
            $unresolved[] = "$name@$line";
        }
    }
    foreach ($collector ? $collector->functions : [] as [$namespaced, $plain, $line]) {
        $names[] = "$namespaced()";
        if ($bootstrap !== '-' && !function_exists($namespaced) && !function_exists($plain)) {
            $unresolved[] = "$namespaced()@$line";
        }
    }
    echo json_encode(['file' => $file, 'parsed' => $collector !== null, 'names' => array_values(array_unique($names)),
        'unresolved' => array_values(array_unique($unresolved))]), "\n";
}
