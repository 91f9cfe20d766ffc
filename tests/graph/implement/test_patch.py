"""apply_patch refuses every escape of git's reference list; nothing is written outside the worktree."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from graph.coder import patch as patching
from graph.tools.files import read_lines
from project import filetext
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


LEGACY_TEXT = "<?php\n// Größe in €, „Anführung“\nfunction size(): string { return 'Größe'; }\necho 'ok';\n"


def test_a_windows_1252_file_is_patched_from_its_own_text_and_keeps_its_encoding(project: Project) -> None:
    """A patch the model writes from the text it read (`project.filetext`) applies to a Windows-1252 file, lands
    in that encoding, and leaves every other byte as it was; an all-bytes file reads and writes back the same."""
    legacy = project.root / "src" / "Legacy.php"
    legacy.write_bytes(LEGACY_TEXT.encode("cp1252"))
    assert filetext.read(legacy) == LEGACY_TEXT
    assert "    2| // Größe in €, „Anführung“" in read_lines(project.root, "src/Legacy.php")  # the read_file tool
    new = LEGACY_TEXT.replace("return 'Größe';", "return 'Maße – 5 €';")
    written = patching.apply(project.root, make_patch("src/Legacy.php", LEGACY_TEXT, new),
                             _policy(["src/Legacy.php"]))
    assert written == ["src/Legacy.php"] and legacy.read_bytes() == new.encode("cp1252")
    every = bytes(range(1, 256)).replace(b"\n", b"") + b"\n"  # no NUL: a NUL byte makes it binary
    assert filetext.encode(filetext.decode(every), filetext.LEGACY) == every


def test_a_character_the_legacy_encoding_lacks_refuses_the_whole_patch_and_writes_nothing(project: Project) -> None:
    legacy = project.root / "src" / "Legacy.php"
    legacy.write_bytes(LEGACY_TEXT.encode("cp1252"))
    calculator = (project.root / "src" / "Calculator.php").read_bytes()
    patch = (make_patch("src/Calculator.php", CALCULATOR, CALCULATOR.replace("$a + $b", "$b + $a"))
             + make_patch("src/Legacy.php", LEGACY_TEXT, LEGACY_TEXT.replace("echo 'ok';", "echo '✓';"))
             + _new("src/Made.php"))
    scope = ["src/Calculator.php", "src/Legacy.php", "src/Made.php"]
    with pytest.raises(patching.PatchRefused, match=r"src/Legacy.php is windows-1252 text, which has no byte for "
                                                    r"'✓' \(U\+2713\)"):
        patching.apply(project.root, patch, _policy(scope))
    assert legacy.read_bytes() == LEGACY_TEXT.encode("cp1252")  # every file as it was, the new one not made
    assert (project.root / "src" / "Calculator.php").read_bytes() == calculator
    assert not (project.root / "src" / "Made.php").exists()


def test_a_file_whose_lines_end_in_crlf_takes_a_patch_written_with_lf_and_keeps_its_line_ends(project: Project) -> None:
    """Files written on Windows end every line with CRLF; the model reads and writes `\\n`, and `git apply`
    refused every hunk of such a file. A file with some LF-only lines is left as it is."""
    windows = project.root / "src" / "Windows.php"
    windows.write_bytes(LEGACY_TEXT.replace("\n", "\r\n").encode("cp1252"))
    assert read_lines(project.root, "src/Windows.php").splitlines()[1] == "    2| // Größe in €, „Anführung“"
    new = LEGACY_TEXT.replace("echo 'ok';", "echo 'ok';\necho 'more';")
    patching.apply(project.root, make_patch("src/Windows.php", LEGACY_TEXT, new), _policy(["src/Windows.php"]))
    assert windows.read_bytes() == new.replace("\n", "\r\n").encode("cp1252")
    mixed = project.root / "src" / "Mixed.php"
    mixed.write_bytes(b"<?php\r\necho 1;\necho 2;\r\n")
    assert not filetext.crlf(mixed.read_bytes())
    patching.apply(project.root, make_patch("src/Mixed.php", "<?php\necho 1;\necho 2;\n", "<?php\necho 3;\necho 2;\n")
                   .replace("<?php\n", "<?php\r\n").replace("echo 2;\n", "echo 2;\r\n"), _policy(["src/Mixed.php"]))
    assert mixed.read_bytes() == b"<?php\r\necho 3;\necho 2;\r\n"


def test_a_file_with_a_byte_order_mark_takes_a_patch_of_its_first_line_and_keeps_the_mark(project: Project) -> None:
    """Windows editors start UTF-8 files with a byte-order mark, which the model neither reads nor writes: a
    patch of the first line (`declare(strict_types=1);` after `<?php`) was refused."""
    marked = project.root / "src" / "Marked.php"
    marked.write_bytes(b"\xef\xbb\xbf<?php\nfunction a(): int { return 1; }\n")
    assert read_lines(project.root, "src/Marked.php").splitlines()[0] == "    1| <?php"
    old = "<?php\nfunction a(): int { return 1; }\n"
    new = "<?php\n\ndeclare(strict_types=1);\n\nfunction a(): int { return 1; }\n"
    patching.apply(project.root, make_patch("src/Marked.php", old, new), _policy(["src/Marked.php"]))
    assert marked.read_bytes() == b"\xef\xbb\xbf" + new.encode()


def test_a_file_without_a_line_end_after_its_last_line_takes_a_patch_of_its_end_and_keeps_it_open(
    project: Project,
) -> None:
    """Legacy PHP files often end without a line end (`?>` last): the model's patch of the end ends every line,
    with or without git's `\\ No newline at end of file` marker, and was refused without the marker."""
    open_end = project.root / "src" / "Open.php"
    for marker in ("", "\\ No newline at end of file\n"):
        open_end.write_bytes(b"<?php\nfunction a() {\n    return 1;\n}\n?>")
        patch = ("--- a/src/Open.php\n+++ b/src/Open.php\n@@ -3,3 +3,3 @@\n-    return 1;\n+    return 2;\n }\n"
                 f" ?>\n{marker}")
        patching.apply(project.root, patch, _policy(["src/Open.php"]))
        assert open_end.read_bytes() == b"<?php\nfunction a() {\n    return 2;\n}\n?>", marker


def test_a_path_with_spaces_is_patched_from_the_headers_git_writes_for_it(project: Project) -> None:
    """git writes a name with spaces unquoted in `diff --git` and ends its `---`/`+++` lines with a tab; a model
    that copies that form was refused (`unreadable diff --git header`) for any file of such a name. A line
    whose two names differ stays refused: which split git would take is then a guess."""
    guide = project.root / "docs" / "Getting Started.md"
    guide.parent.mkdir()
    guide.write_text("# Start\nRun it.\n")
    git(project.root, "add", "docs")
    git(project.root, "commit", "-qm", "docs")
    header = "diff --git a/docs/Getting Started.md b/docs/Getting Started.md\nindex 1111111..2222222 100644\n"
    hunk = ("--- a/docs/Getting Started.md\t\n+++ b/docs/Getting Started.md\t\n"
            "@@ -1,2 +1,2 @@\n # Start\n-Run it.\n+Run `make`.\n")
    written = patching.apply(project.root, header + hunk, _policy(["docs/Getting Started.md"]))
    assert written == ["docs/Getting Started.md"] and guide.read_text() == "# Start\nRun `make`.\n"
    made = ("diff --git a/docs/Read Me.md b/docs/Read Me.md\nnew file mode 100644\n--- /dev/null\n"
            "+++ b/docs/Read Me.md\t\n@@ -0,0 +1 @@\n+new\n")
    assert patching.apply(project.root, made, _policy(["docs/Read Me.md"])) == ["docs/Read Me.md"]
    with pytest.raises(patching.PatchRefused):
        patching.apply(project.root, header.replace("b/docs/Getting Started.md", "b/docs/Getting Going.md") + hunk,
                       _policy(["docs/Getting Started.md", "docs/Getting Going.md"]))
    assert guide.read_text() == "# Start\nRun `make`.\n"
