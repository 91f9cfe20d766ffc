"""Review tests: a real git repository with a change branch, and a runtime for single nodes."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from foundation.forge.models import FileChange

ENV = ["-c", "user.name=t", "-c", "user.email=t@t.invalid"]

BASE_FILES = {
    "src/Cart.php": "<?php\nclass Cart\n{\n    public function total(array $items): int\n    {\n"
                    "        $sum = 0;\n        foreach ($items as $item) {\n            $sum += $item;\n"
                    "        }\n        return $sum;\n    }\n}\n",
    "src/Legacy.php": "<?php\nclass Legacy\n{\n    public function run(): void\n    {\n    }\n}\n",
    # php -l only: PSR-12 would flag these namespace-less fixtures on the very lines the tests review
    ".forgebot.yml": "commands:\n  lint:\n    phpcs: false\n",
}


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *ENV, *args], capture_output=True, text=True, check=True)
    return done.stdout


def write(repo: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        target = repo / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)


@dataclass
class ChangeRepo:
    """`main` with two PHP files and branch `feature` changing, adding and renaming files."""

    root: Path
    base: str
    head: str

    def commit(self, files: dict[str, str], message: str = "more") -> str:
        write(self.root, files)
        git(self.root, "add", "-A")
        git(self.root, "commit", "-q", "-m", message)
        self.head = git(self.root, "rev-parse", "HEAD").strip()
        return self.head


def make_change_repo(root: Path) -> ChangeRepo:
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    write(root, BASE_FILES)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    base = git(root, "rev-parse", "HEAD").strip()
    git(root, "checkout", "-q", "-b", "feature")
    git(root, "mv", "src/Legacy.php", "src/Runner.php")
    repo = ChangeRepo(root=root, base=base, head=base)
    cart = BASE_FILES["src/Cart.php"].replace("$sum += $item;", "$sum += $item * 2;")
    runner = BASE_FILES["src/Legacy.php"].replace("class Legacy", "class Runner")
    discount = "<?php\nfunction discount(int $x): int\n{\n    return $x - 1;\n}\n"
    repo.commit({"src/Cart.php": cart, "src/Runner.php": runner, "src/Discount.php": discount}, "feature")
    return repo


@pytest.fixture
def change_repo(tmp_path: Path) -> ChangeRepo:
    return make_change_repo(tmp_path / "repo")


RepoFactory = Callable[[Path], ChangeRepo]


def change_files(repo: ChangeRepo, base: str | None = None) -> tuple[FileChange, ...]:
    """The change's files as a forge reports them: `git diff base..head` parsed into hunks."""
    from foundation.forge.diff import parse
    from foundation.gitrunner import git as git_text

    diff = git_text(repo.root, "diff", "-M", base or repo.base, repo.head)
    return tuple(part.change() for part in parse(diff))
