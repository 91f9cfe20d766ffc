<?php
// Hidden test for task inflector-urlize: pins Inflector::urlize after its body was removed.
declare(strict_types=1);

use Doctrine\Inflector\InflectorFactory;
use PHPUnit\Framework\TestCase;

final class InflectorUrlizeTest extends TestCase
{
    public function testWordsAreLoweredAndJoinedWithDashes(): void
    {
        $inflector = InflectorFactory::create()->build();
        self::assertSame('my-first-blog-post', $inflector->urlize('My first blog post'));
    }

    public function testAccentsAndPunctuationAreRemoved(): void
    {
        $inflector = InflectorFactory::create()->build();
        self::assertSame('ca-va-bien', $inflector->urlize('Ça va, bien?'));
        self::assertSame('hello-world', $inflector->urlize('  Hello -- World!  '));
    }

    public function testGermanUmlautsAreTransliteratedAndSeparatorsBecomeDashes(): void
    {
        $inflector = InflectorFactory::create()->build();
        self::assertSame('ueber-9000-aepfel', $inflector->urlize('Über 9000 Äpfel'));
        self::assertSame('fancy-title-v2', $inflector->urlize('fancy_title.v2'));
    }
}
