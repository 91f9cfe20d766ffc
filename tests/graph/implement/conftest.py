"""A small PHP project with PHPUnit tests as a real git repository: a bare origin and a task worktree.

PHP and PHPUnit are skipped when absent, or fail the test under FORGEBOT_REQUIRE_TOOLS=1 (`tests.tools`).
"""

from __future__ import annotations

import difflib
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from foundation.settings import SandboxSettings, Settings, WorkspaceSettings
from tests.tools import need_tools

GIT_ENV = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_AUTHOR_NAME": "dev", "GIT_AUTHOR_EMAIL": "dev@example.invalid",
           "GIT_COMMITTER_NAME": "dev", "GIT_COMMITTER_EMAIL": "dev@example.invalid"}

CALCULATOR = """<?php

declare(strict_types=1);

namespace App;

final class Calculator
{
    public function add(int $a, int $b): int
    {
        return $a + $b;
    }
}
"""

CALCULATOR_TEST = """<?php

declare(strict_types=1);

use App\\Calculator;
use PHPUnit\\Framework\\TestCase;

require_once __DIR__ . '/../src/Calculator.php';

final class CalculatorTest extends TestCase
{
    public function testAdd(): void
    {
        $this->assertSame(5, (new Calculator())->add(2, 3));
    }
}
"""

PHPUNIT_XML = """<?xml version="1.0" encoding="UTF-8"?>
<phpunit colors="false">
  <testsuites>
    <testsuite name="unit"><directory>tests</directory></testsuite>
  </testsuites>
</phpunit>
"""

# phpcs stays off: the fixture tests the route, not PSR-12; php -l is the syntax gate.
FORGEBOT_YML = "profile: php\ncommands:\n  lint:\n    phpcs: false\n  timeout_seconds: 60\n"


def need_php() -> None:
    need_tools("php", "phpunit")


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, env=GIT_ENV, check=True)
    return done.stdout


@dataclass
class Project:
    origin: Path  # bare repository: the forge's copy, where delivery pushes
    root: Path  # the task worktree
    base: str  # commit the task starts from
    outside: Path  # a directory beside the worktree that must never be written

    def text(self, path: str) -> str:
        return (self.root / path).read_text()


def make_patch(path: str, old: str, new: str) -> str:
    """A unified diff of `path` from `old` to `new` (an empty `old` creates the file)."""
    before = f"a/{path}" if old else "/dev/null"
    lines = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True), before, f"b/{path}")
    return "".join(lines)


@pytest.fixture
def project(tmp_path: Path, php: str) -> Project:
    """The project, on a machine with PHP and PHPUnit (the `php` fixture marks the test `php`)."""
    need_php()
    return make_project(tmp_path)


def make_project(tmp_path: Path) -> Project:
    """The fixture project under `tmp_path`: `seed`, its bare clone `origin.git`, a clone `work`."""
    seed = tmp_path / "seed"
    (seed / "src").mkdir(parents=True)
    (seed / "tests").mkdir()
    (seed / "src" / "Calculator.php").write_text(CALCULATOR)
    (seed / "tests" / "CalculatorTest.php").write_text(CALCULATOR_TEST)
    (seed / "phpunit.xml").write_text(PHPUNIT_XML)
    (seed / ".forgebot.yml").write_text(FORGEBOT_YML)
    (seed / ".gitlab-ci.yml").write_text("test:\n  script: phpunit\n")
    git(tmp_path, "init", "-q", "-b", "main", str(seed))
    git(seed, "add", "-A")
    git(seed, "commit", "-qm", "initial")
    origin = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(origin))
    root = tmp_path / "work"
    git(tmp_path, "clone", "-q", str(origin), str(root))
    outside = tmp_path / "outside"
    outside.mkdir()
    return Project(origin=origin, root=root, base=git(root, "rev-parse", "HEAD").strip(), outside=outside)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(  # type: ignore[call-arg]
        _env_file=None, data_dir=tmp_path / "data",
        workspace=WorkspaceSettings(allowed_protocols=("file",)),
        sandbox=SandboxSettings(allow_root=True),  # the suite runs as root (tests/conftest.py)
    )
