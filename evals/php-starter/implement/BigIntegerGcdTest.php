<?php
// Hidden test for task brick-biginteger-gcd: pins Brick\Math\BigInteger::gcd after its body was removed.
declare(strict_types=1);

use Brick\Math\BigInteger;
use PHPUnit\Framework\TestCase;

final class BigIntegerGcdTest extends TestCase
{
    public function testSmallNumbers(): void
    {
        self::assertSame('6', (string) BigInteger::of(54)->gcd(24));
        self::assertSame('1', (string) BigInteger::of(17)->gcd('5'));
    }

    public function testZeroAndSigns(): void
    {
        self::assertSame('7', (string) BigInteger::of(0)->gcd(7));
        self::assertSame('7', (string) BigInteger::of(7)->gcd(0));
        self::assertSame('4', (string) BigInteger::of(-12)->gcd(8));
        self::assertSame('4', (string) BigInteger::of(12)->gcd(-8));
    }

    public function testBeyondNativeIntegers(): void
    {
        $a = BigInteger::of('123456789012345678901234567890');
        self::assertSame('30', (string) $a->gcd('30'));
        self::assertSame('123456789012345678901234567890', (string) $a->gcd($a->multipliedBy(3)));
    }
}
