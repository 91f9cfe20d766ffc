<?php
// Hidden test for task inflector-tableize: pins Inflector::tableize after its body was removed.
declare(strict_types=1);

use Doctrine\Inflector\InflectorFactory;
use PHPUnit\Framework\TestCase;

final class InflectorTableizeTest extends TestCase
{
    public function testCamelCaseBecomesSnakeCase(): void
    {
        $inflector = InflectorFactory::create()->build();
        self::assertSame('model_name', $inflector->tableize('ModelName'));
        self::assertSame('foo_bar_baz', $inflector->tableize('fooBarBaz'));
    }

    public function testSnakeCaseAndSingleWordsAreKept(): void
    {
        $inflector = InflectorFactory::create()->build();
        self::assertSame('already_snake', $inflector->tableize('already_snake'));
        self::assertSame('user', $inflector->tableize('User'));
    }

    public function testEveryUppercaseLetterAfterAWordCharacterStartsAWord(): void
    {
        $inflector = InflectorFactory::create()->build();
        self::assertSame('h_t_t_p_server', $inflector->tableize('HTTPServer'));
    }
}
