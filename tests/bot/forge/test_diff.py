"""The one diff model: git's quoting decoded once; the patch guard reads what `git apply` applies."""

from __future__ import annotations

from pathlib import Path

import pytest

from foundation.forge.diff import DiffError, parse, recount
from graph.coder import patch as patching

QUOTED = (
    'diff --git "a/caf\\303\\251.php" "b/th\\303\\251 \\"x\\".php"\n'
    "similarity index 90%\n"
    'rename from "caf\\303\\251.php"\n'
    'rename to "th\\303\\251 \\"x\\".php"\n'
    '--- "a/caf\\303\\251.php"\n'
    '+++ "b/th\\303\\251 \\"x\\".php"\n'
    "@@ -1,2 +1,2 @@\n <?php\n-echo 1;\n+echo 2;\n"
    "diff --git a/my file.php b/my file.php\nnew file mode 100644\n--- /dev/null\n+++ b/my file.php\t\n"
    "@@ -0,0 +1 @@\n+x\n"
)


def test_quoted_and_spaced_names_are_decoded() -> None:
    renamed, added = parse(QUOTED)
    assert (renamed.old_path, renamed.path, renamed.status) == ("café.php", 'thé "x".php', "renamed")
    assert [(line.kind.name, line.old_line, line.new_line) for line in renamed.hunks[0].lines] == [
        ("CONTEXT", 1, 1), ("REMOVED", 2, None), ("ADDED", None, 2)]
    assert (added.path, added.status, added.hunks[0].lines[0].text) == ("my file.php", "added", "x")


def test_control_characters_and_bad_quoting_are_refused() -> None:
    with pytest.raises(DiffError, match="control character"):
        parse('--- "a/x\\001.php"\n+++ "b/x\\001.php"\n@@ -1 +1 @@\n-a\n+b\n')
    with pytest.raises(DiffError, match="invalid escape"):
        parse('--- "a/x\\q.php"\n+++ "b/x\\q.php"\n@@ -1 +1 @@\n-a\n+b\n')


def test_recount_fixes_counts_and_the_guard_reads_the_recounted_text(tmp_path: Path) -> None:
    """A hunk claiming one line, followed by a second file's headers: the guard sees every path git would."""
    sneaky = ("--- a/src/A.php\n+++ b/src/A.php\n@@ -1,1 +1,1 @@\n-a\n+b\n"
              "--- a/.gitlab-ci.yml\n+++ b/.gitlab-ci.yml\n@@ -1 +1 @@\n-x\n+y\n")
    assert {p for f in parse(sneaky) for p in f.named} == {"src/A.php", ".gitlab-ci.yml"}
    (root := tmp_path / "r").mkdir()
    policy = patching.PatchPolicy(writable=lambda: ["src/A.php"], protected=patching.protection([], []))
    with pytest.raises(patching.PatchRefused, match=".gitlab-ci.yml"):
        patching.apply(root, sneaky, policy)
    miscounted = "--- a/src/A.php\n+++ b/src/A.php\n@@ -1,5 +1,9 @@\n-a\n+b\n"
    assert recount(miscounted).splitlines()[2] == "@@ -1,1 +1,1 @@"


def test_a_miscounted_hunk_cannot_smuggle_a_second_file_past_the_guard(tmp_path: Path) -> None:
    """Too-long counts absorb the next header as hunk lines in every reading: git never writes the CI file."""
    import subprocess

    root = tmp_path / "r"
    (root / "src").mkdir(parents=True)
    (root / "src" / "A.php").write_text("a\n")
    (root / ".gitlab-ci.yml").write_text("x\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    smuggling = ("--- a/src/A.php\n+++ b/src/A.php\n@@ -1,3 +1,3 @@\n-a\n+b\n"
                 "--- a/.gitlab-ci.yml\n+++ b/.gitlab-ci.yml\n@@ -1 +1 @@\n-x\n+y\n")
    policy = patching.PatchPolicy(writable=lambda: ["src/A.php"], protected=patching.protection([], []))
    for text in (smuggling, recount(smuggling)):
        try:
            assert patching.patch_paths(text) == ["src/A.php"]
        except patching.PatchRefused:
            pass  # a reading the model cannot parse is refused outright
    with pytest.raises(patching.PatchRefused):
        patching.apply(root, smuggling, policy)
    assert (root / ".gitlab-ci.yml").read_text() == "x\n"
