"""apply_patch refuses every escape of git's reference list; nothing is written outside the worktree."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from graph.coder import patch as patching
from tests.graph.implement.conftest import CALCULATOR, Project, git, make_patch


def _policy(scope: list[str], allowed: tuple[str, ...] = ()) -> patching.PatchPolicy:
    return patching.PatchPolicy(writable=lambda: scope, protected=patching.protection((), allowed))


def _new(path: str, text: str = "<?php echo 1;\n") -> str:
    return make_patch(path, "", text)


def _symlink_patch(name: str, target: str) -> str:
    return (f"diff --git a/{name} b/{name}\nnew file mode 120000\nindex 0000000..1111111\n"
            f"--- /dev/null\n+++ b/{name}\n@@ -0,0 +1 @@\n+{target}\n\\ No newline at end of file\n")


def _escapes(project: Project) -> dict[str, tuple[str, list[str]]]:
    outside = project.outside
    os.symlink(outside, project.root / "linked")
    return {
        "dot-dot": (_new("../outside/evil.php"), ["../outside/evil.php"]),
        "quoted dot-dot": ('--- /dev/null\n+++ "b/../outside/q.php"\n@@ -0,0 +1 @@\n+x\n', ["../outside/q.php"]),
        "absolute": (f"--- /dev/null\n+++ {outside}/abs.php\n@@ -0,0 +1 @@\n+x\n", [f"{outside}/abs.php"]),
        "git dir": (_new(".git/hooks/pre-commit", "#!/bin/sh\ntouch /tmp/pwned\n"), [".git/hooks/pre-commit"]),
        "nested git dir": (_new("src/.git/config"), ["src/.git/config"]),
        "existing symlink": (_new("linked/evil.php"), ["linked/evil.php"]),
        "symlink created": (_symlink_patch("made", str(outside)) + _new("made/evil.php"), ["made", "made/evil.php"]),
        "protected CI": (make_patch(".gitlab-ci.yml", "test:\n  script: phpunit\n", "test:\n  script: curl x\n"),
                         [".gitlab-ci.yml"]),
        "outside scope": (_new("src/Other.php"), []),
        # git apply -p1 would strip `src/` and write Calculator.php at the root, not the named file
        "unprefixed header": ("--- src/Calculator.php\n+++ src/Calculator.php\n@@ -1 +1 @@\n-<?php\n+<?php \n",
                              ["src/Calculator.php", "Calculator.php"]),
    }


def test_each_escape_is_refused_and_nothing_is_written(project: Project) -> None:
    for name, (patch, scope) in _escapes(project).items():
        with pytest.raises(patching.PatchRefused):
            patching.apply(project.root, patch, _policy(scope))
        assert list(project.outside.iterdir()) == [], name
        assert git(project.root, "status", "--porcelain").strip() == "?? linked", name
    assert not Path("/tmp/pwned").exists()


def test_a_patch_in_scope_applies(project: Project) -> None:
    new = CALCULATOR.replace("        return $a + $b;\n", "        return $b + $a;\n")
    diff = make_patch("src/Calculator.php", CALCULATOR, new)
    written = patching.apply(project.root, diff, _policy(["src/Calculator.php"]))
    assert written == ["src/Calculator.php"]
    assert "return $b + $a;" in project.text("src/Calculator.php")


def test_protected_path_allowed_by_repository_config(project: Project) -> None:
    patch = make_patch(".gitlab-ci.yml", "test:\n  script: phpunit\n", "test:\n  script: phpunit --strict\n")
    with pytest.raises(patching.PatchRefused, match="protected"):
        patching.apply(project.root, patch, _policy([".gitlab-ci.yml"]))
    patching.apply(project.root, patch, _policy([".gitlab-ci.yml"], allowed=(".gitlab-ci.yml",)))
    assert "--strict" in project.text(".gitlab-ci.yml")


def test_stale_patch_is_refused_before_any_write(project: Project) -> None:
    patch = make_patch("src/Calculator.php", CALCULATOR.replace("add", "sum"), CALCULATOR.replace("add", "plus"))
    with pytest.raises(patching.PatchRefused, match="does not apply"):
        patching.apply(project.root, patch, _policy(["src/Calculator.php"]))
    assert project.text("src/Calculator.php") == CALCULATOR
