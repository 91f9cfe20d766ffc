"""Regexes over untrusted text (MR descriptions, check output, model output) run in linear time.

Each fixed function is fed an adversarial input at n and 8n characters. A linear function takes about
8x as long; the bound below is 40x. Measured on the old patterns (2 shared cores), where 4n already
shows the growth and 8n is worse still:
- review heading `^\\s*(?:#{1,6}\\s+|\\*\\*)(.+?)(?:\\*\\*)?\\s*:?\\s*$` on "# x" + spaces + "x": cubic,
  n=100 -> 400 took 0.0036 s -> 0.186 s (51x for 4n; ~500x for 8n; 3,000 spaces took 20 s).
- pytest summary `^=*\\s*((?:\\d+ \\w+|no tests ran)(?:, \\d+ \\w+)* in [\\d.]+s.*?)\\s*=*$` on
  "1 passed in 1s" + spaces + "x" and on a run of newlines: quadratic, 55x and 65x for 8n.
- closes `\\s*:?\\s+#` on "closes" + spaces: 55x for 8n; `[\\w./-]+\\.\\w{1,5}` on a dotless word: 61x;
  checklist evidence `\\S+:\\d+` on a colonless word: 59x (now `check_evidence`, no regex).
- the pytest classifier read a test's traceback section again for every FAILED line naming it:
  quadratic in FAILED lines (83x for 8n; 14 s at 160 KB).
- `.forgebot.yml` errors: every field was compared with every other to keep the most specific one,
  quadratic in invalid fields (7,000 of them: 32 s of the receiver's event loop).
Every case calls the product's own function, never a copy of its pattern. Each fixed function is
also compared with its old pattern on random short inputs: same results.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from foundation.settings import SandboxSettings, Settings
from graph.coder.checklist import ItemRejected, check_evidence
from graph.nodes.analyzer import _PATHLIKE, pathlike
from graph.nodes.review_intake import closed_issues, heading_title, list_items
from project.checks import context_for, run_checks
from project.classify import _pytest_summaries, classify
from project.repoconfig import RepoConfigError, parse_repo_config
from prompts import neutralise
from tests.tools import need_namespaces

OLD_HEADING = re.compile(r"^\s*(?:#{1,6}\s+|\*\*)(.+?)(?:\*\*)?\s*:?\s*$")
OLD_SUMMARY = re.compile(r"^=*\s*((?:\d+ \w+|no tests ran)(?:, \d+ \w+)* in [\d.]+s.*?)\s*=*$", re.M)
OLD_CLOSES = re.compile(r"\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?|implement[sd]?)\s*:?\s+#(\d+)", re.I)
RATIO = 40


def _seconds(call: Callable[[], object]) -> float:
    """The call's CPU time on this thread, best of five: time spent preempted by other processes
    (the suite runs in parallel on shared cores) is not the regex's work and must not count."""
    best = float("inf")
    for _ in range(5):
        start = time.thread_time()
        call()
        best = min(best, time.thread_time() - start)
    return best


def _assert_linear(function: Callable[[str], object], make: Callable[[int], str], n: int) -> None:
    small, large = make(n), make(8 * n)
    small_time = max(_seconds(lambda: function(small)), 1e-4)  # below 0.1 ms timer noise dominates
    large_time = _seconds(lambda: function(large))
    assert large_time / small_time < RATIO, (small_time, large_time)


def _evidence(text: str) -> bool:
    """The coder's `path:line` evidence check (a plan blocker, an `already_done` claim), as the tool runs it."""
    try:
        check_evidence(Path(__file__).parent, text)
    except ItemRejected:
        return False
    return True


def _invalid_entries(count: int) -> str:
    """A `.forgebot.yml` whose `commands.lint` holds `count` entries, none of them a command."""
    return "commands:\n  lint: {" + ",".join(f"k{i}:1" for i in range(count)) + "}\n"


def _config_errors(text: str) -> str:
    try:
        parse_repo_config(text)
    except RepoConfigError as exc:
        return str(exc)
    raise AssertionError("the file is invalid")


def _failed_lines(n: int) -> str:
    """One test's traceback section and many FAILED lines naming it (pytest prints one per failure)."""
    return "___ test_x ___\n" + "E   boom\n" * (n // 18) + "FAILED t.py::test_x\n" * (n // 40)


ADVERSARIAL: list[tuple[str, Callable[[str], object], Callable[[int], str], int]] = [
    ("heading hash", heading_title, lambda n: "# x" + " " * n + "x", 20_000),
    ("heading bold", heading_title, lambda n: "**" + " " * n + "x", 20_000),
    ("heading colon", heading_title, lambda n: "# x" + " " * n + ":x", 20_000),
    ("description", list_items, lambda n: ("# x" + " " * 50 + "x\n") * (n // 50), 20_000),
    ("description comments", list_items, lambda n: "<!--" * (n // 4), 20_000),
    ("description fences", list_items, lambda n: "```\n" * (n // 4), 20_000),
    ("summary spaces", _pytest_summaries, lambda n: "1 passed in 1s" + " " * n + "x", 20_000),
    ("summary newlines", _pytest_summaries, lambda n: "\n" * n, 20_000),
    ("summary classify", lambda s: classify("pytest", s, 1), lambda n: "= 1 passed in 1s" + " " * n + "x", 20_000),
    ("closes", closed_issues, lambda n: "closes" + " " * n + "x", 20_000),
    ("pathlike", pathlike, lambda n: "a" * n, 20_000),
    ("evidence", _evidence, lambda n: "a" * n, 20_000),
    ("evidence colon", _evidence, lambda n: "a" * n + ":1", 20_000),
    ("classify FAILED lines", lambda s: classify("pytest", s, 1), _failed_lines, 20_000),
    ("fence invisibles", neutralise, lambda n: "<" + "\u200b" * n + "a", 20_000),
    ("config errors", lambda s: _config_errors(s), lambda n: _invalid_entries(n // 10), 6_000),
    ("fence many", neutralise, lambda n: "<\u200b/ a <b c " * (n // 12), 20_000),
]


@pytest.mark.parametrize(("name", "function", "make", "n"), ADVERSARIAL, ids=[a[0] for a in ADVERSARIAL])
def test_work_grows_linearly(name: str, function: Callable[[str], object], make: Callable[[int], str], n: int) -> None:
    _assert_linear(function, make, n)


def _strings(alphabet: str, count: int, longest: int) -> list[str]:
    rng = random.Random(17)
    return ["".join(rng.choice(alphabet) for _ in range(rng.randrange(longest))) for _ in range(count)]


def test_heading_matches_the_old_pattern() -> None:
    for line in _strings("# *:\tab", 20_000, 12):
        old = OLD_HEADING.match(line)
        assert heading_title(line) == (old.group(1) if old else None), repr(line)
    for line in ["## Acceptance criteria:", "**Definition of done**", "####### x", "#x", "  # Requirements **"]:
        old = OLD_HEADING.match(line)
        assert heading_title(line) == (old.group(1) if old else None), repr(line)


def test_summary_matches_the_old_pattern() -> None:
    for text in _strings("= \n1a,.s in", 20_000, 24):
        assert _pytest_summaries(text) == OLD_SUMMARY.findall(text), repr(text)
    text = "==== 2 failed, 10 passed, 1 skipped in 3.21s ====\n\n=== no tests ran in 0.01s ===\n"
    assert _pytest_summaries(text) == OLD_SUMMARY.findall(text) == [
        "2 failed, 10 passed, 1 skipped in 3.21s", "no tests ran in 0.01s"]


def test_closes_and_paths_match_the_old_patterns() -> None:
    for text in _strings("closes fix:# 12\n", 5_000, 30):
        assert closed_issues(text) == list(dict.fromkeys(int(n) for n in OLD_CLOSES.findall(text))), repr(text)
    for text in _strings("ab1./-_ x", 20_000, 30):
        assert pathlike(text) == _PATHLIKE.findall(text), repr(text)


def test_evidence_names_an_existing_line() -> None:
    here = Path(__file__).name
    lines = Path(__file__).read_text(encoding="utf-8").count("\n") + 1
    assert _evidence(f"{here}:1") and _evidence(f"{here}:{lines}") and _evidence(f"{here}:2-3")
    for bad in (here, f"{here}:0", f"{here}:{lines + 1}", f"{here}:x", "missing.py:1", ":1", "../x.py:1"):
        assert not _evidence(bad), bad


def test_many_failed_lines_keep_their_traceback_detail() -> None:
    result = classify("pytest", _failed_lines(400), 1)
    assert len(result.failures) == 10 and {f.message for f in result.failures} == {"boom"}


def test_a_checks_failed_lines_are_classified_in_linear_time_through_the_sandbox(tmp_path: Path) -> None:
    """The attack as a repository makes it: its test command prints one traceback and thousands of
    FAILED lines naming it, in the real check sandbox, and the worker classifies what came back
    (`run_checks` of the Python profile). The worker thread's CPU time grows with the output: at
    8x the output at most 20x the time (linear is 8x and the sandbox's fixed cost makes it less).
    Before, the classification alone was quadratic: ~18 s of the worker at the output cap."""
    need_namespaces()
    worktree = tmp_path / "repo"
    worktree.mkdir()
    (worktree / "emit.py").write_text("import sys\nsys.stdout.write(open(sys.argv[1]).read())\nsys.exit(1)\n")
    settings = Settings(_env_file=None, _secrets_dir=None, data_dir=tmp_path / "data",  # type: ignore[call-arg]
                        sandbox=SandboxSettings(allow_root=True))
    config = parse_repo_config("profile: python\ncommands:\n  test: python3 emit.py output.txt\n  lint: false\n")
    context = context_for(worktree, config, [], settings, {"PATH": "/usr/local/bin:/usr/bin:/bin"})

    def checked(size: int) -> Callable[[], object]:
        (worktree / "output.txt").write_text(_failed_lines(size))  # under the 64 KiB the worker keeps

        def run() -> object:
            (test,) = run_checks(context, ("test",)).results
            assert test.status == "failed" and test.classification is not None, test
            failures = test.classification.failures  # one per FAILED line, each with the section's detail
            assert len(failures) == size // 40 and {f.message for f in failures} == {"boom"}
            return test
        return run

    small = checked(7_000)
    small_time = _seconds(small)
    large = checked(56_000)
    large_time = _seconds(large)
    assert large_time / small_time < 20, (small_time, large_time)
