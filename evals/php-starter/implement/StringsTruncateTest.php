<?php
// Hidden test for task nette-strings-truncate: pins Nette\Utils\Strings::truncate after its body was removed.
declare(strict_types=1);

use Nette\Utils\Strings;
use PHPUnit\Framework\TestCase;

final class StringsTruncateTest extends TestCase
{
    public function testShortStringIsUnchanged(): void
    {
        self::assertSame('short', Strings::truncate('short', 10));
        self::assertSame('exact', Strings::truncate('exact', 5));
    }

    public function testCutsAtAWordBoundaryWhenPossible(): void
    {
        self::assertSame("Lorem ipsum\u{2026}", Strings::truncate('Lorem ipsum dolor sit amet', 15));
    }

    public function testCutsInsideAWordWhenThereIsNoBoundary(): void
    {
        self::assertSame('abcd...', Strings::truncate('abcdefghijkl', 7, '...'));
    }

    public function testCountsCharactersNotBytes(): void
    {
        self::assertSame("žluťoučký", Strings::truncate('žluťoučký', 9));
        self::assertSame("žlu\u{2026}", Strings::truncate('žluťoučký', 4));
    }

    public function testTooShortForTheEllipsisReturnsTheEllipsis(): void
    {
        self::assertSame('...', Strings::truncate('abcdefgh', 2, '...'));
    }
}
