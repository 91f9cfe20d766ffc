<?php
// Hidden test for task collections-arr-dot: pins Illuminate\Support\Arr::dot after its body was removed.
declare(strict_types=1);

use Illuminate\Support\Arr;
use PHPUnit\Framework\TestCase;

final class ArrDotTest extends TestCase
{
    public function testNestedKeysAreJoinedWithDots(): void
    {
        $array = ['app' => ['name' => 'forge', 'debug' => false], 'db' => ['mysql' => ['port' => 3306]]];
        self::assertSame(['app.name' => 'forge', 'app.debug' => false, 'db.mysql.port' => 3306], Arr::dot($array));
    }

    public function testEmptyArraysAreLeaves(): void
    {
        self::assertSame(['a.b' => [], 'c' => 1], Arr::dot(['a' => ['b' => []], 'c' => 1]));
    }

    public function testListsUseNumericSegmentsAndPrefix(): void
    {
        self::assertSame(['p.0' => 'x', 'p.1.k' => 'y'], Arr::dot(['x', ['k' => 'y']], 'p.'));
    }
}
