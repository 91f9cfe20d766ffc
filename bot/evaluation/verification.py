"""Outcome checks: hidden PHPUnit tests, expected review findings, expected analysis locations.

Each check reads only what the task set declares and what the run produced; none trusts the bot's
own claim of success.
"""

from __future__ import annotations

import re
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.evaluation.external import run_command
from bot.evaluation.taskset import ExpectedFindings, ExpectedLocations, HiddenTests


@dataclass(frozen=True)
class TestRun:
    passed: bool
    tests: int
    failures: int
    errors: int
    detail: str  # the tail of PHPUnit's output, for the report


def run_hidden_tests(spec: HiddenTests, workspace: Path, taskset_dir: Path) -> TestRun:
    """Run each hidden test file with the workspace's autoloader; all must pass.

    The tests stay outside the workspace, so the bot never sees them.
    """
    bootstrap = workspace / spec.bootstrap
    totals = [0, 0, 0]
    passed, details = True, []
    with tempfile.TemporaryDirectory(prefix="fb-phpunit-") as tmp:
        for number, rel in enumerate(spec.files):
            junit = Path(tmp) / f"junit-{number}.xml"
            args = ["phpunit", "--no-configuration", "--do-not-cache-result", "--colors=never"]
            args += ["--bootstrap", str(bootstrap), "--log-junit", str(junit), str((taskset_dir / rel).resolve())]
            done = run_command(args, cwd=workspace, timeout=spec.timeout, check=False)
            counts = _junit_counts(junit)
            totals = [a + b for a, b in zip(totals, counts, strict=True)]
            # no test run at all (a fatal error before PHPUnit started) is a failure too
            passed = passed and done.returncode == 0 and counts[0] > 0
            details.append((done.stdout + done.stderr).strip()[-600:])
    return TestRun(passed=passed, tests=totals[0], failures=totals[1], errors=totals[2], detail="\n".join(details))


def _junit_counts(path: Path) -> tuple[int, int, int]:
    if not path.is_file() or path.stat().st_size == 0:
        return (0, 0, 0)
    root = ET.parse(path).getroot()
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    if suite is None:
        return (0, 0, 0)
    return tuple(int(suite.get(k, "0")) for k in ("tests", "failures", "errors"))  # type: ignore[return-value]


@dataclass(frozen=True)
class ReportedFinding:
    path: str
    start_line: int
    end_line: int


@dataclass(frozen=True)
class FindingsMatch:
    passed: bool
    matched: list[str]
    missed: list[str]
    unexpected: int
    source: str  # "state" or "comments": where the findings were read from
    recall: float = 0.0  # expected findings reported / expected findings
    precision: float = 1.0  # reported findings that were expected / reported findings (distinct locations)


def _norm_path(path: str) -> str:
    return path.strip().removeprefix("./").lstrip("/")


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and value >= 1 else None


def _finding_from(raw: Any) -> ReportedFinding | None:
    if not isinstance(raw, dict):
        return None
    path = raw.get("path") or raw.get("file")
    start = _int(raw.get("start_line")) or _int(raw.get("line"))
    if not isinstance(path, str) or start is None:
        return None
    end = _int(raw.get("end_line")) or start
    return ReportedFinding(path=_norm_path(path), start_line=start, end_line=max(start, end))


_PATH_LINE = re.compile(r"([\w./-]+\.php):(\d+)(?:-(\d+))?")


def reported_findings(state: dict[str, Any], comments: Iterable[str]) -> tuple[list[ReportedFinding], str]:
    """The reviewer's findings (`state["review"]["findings"]`, a `Review` dump), else `path:line` in comments.

    When the reviewer ran, its `review` is the record, even with no findings: the comments then only
    repeat them (or carry unrelated `path:line` text, such as a failure note's evidence). Comments are
    read only when no review was recorded (a route that ended before its reviewer).
    """
    review = state.get("review")
    if isinstance(review, dict):
        raw = review.get("findings")
        found = [f for f in (_finding_from(r) for r in raw) if f is not None] if isinstance(raw, list) else []
        return found, "state"
    hits = []
    for comment in comments:
        for m in _PATH_LINE.finditer(comment):
            start = int(m.group(2))
            end = int(m.group(3)) if m.group(3) else start
            hits.append(ReportedFinding(path=_norm_path(m.group(1)), start_line=start, end_line=max(start, end)))
    return hits, "comments"


def match_findings(spec: ExpectedFindings, reported: list[ReportedFinding], source: str) -> FindingsMatch:
    """Each expected finding needs a reported one on its file overlapping its lines ± tolerance, and
    the share of reported locations that match an expected one must reach `spec.min_precision`."""
    matched: list[str] = []
    missed: list[str] = []
    used: set[int] = set()
    for exp in spec.findings:
        label = f"{exp.path}:{exp.start_line}-{exp.end_line}"
        lo, hi = exp.start_line - spec.tolerance, exp.end_line + spec.tolerance
        hits = [i for i, r in enumerate(reported) if r.path == exp.path and r.start_line <= hi and r.end_line >= lo]
        (matched if hits else missed).append(label)
        used.update(hits)
    distinct = {(r.path, r.start_line, r.end_line) for r in reported}
    expected = {(r.path, r.start_line, r.end_line) for i, r in enumerate(reported) if i in used}
    unexpected = len(distinct - expected)
    precision = len(expected) / len(distinct) if distinct else 1.0
    recall = len(matched) / len(spec.findings)
    return FindingsMatch(passed=not missed and precision >= spec.min_precision, matched=matched, missed=missed,
                         unexpected=unexpected, source=source, recall=round(recall, 3),
                         precision=round(precision, 3))


@dataclass(frozen=True)
class LocationsMatch:
    passed: bool
    found_files: list[str] = field(default_factory=list)
    missing_files: list[str] = field(default_factory=list)
    found_symbols: list[str] = field(default_factory=list)
    missing_symbols: list[str] = field(default_factory=list)


def _norm_symbol(symbol: str) -> str:
    """One spelling for every language's: a member is `owner.member` (PHP's `::` and `->`, the graph's `::`,
    Python's and TypeScript's `.`), without a leading `\\`, call parentheses or case."""
    return symbol.strip().lstrip("\\").removesuffix("()").replace("->", ".").replace("::", ".").lower()


def _symbol_found(expected: str, reported: Iterable[str]) -> bool:
    """`Inflector::tableize` matches `Doctrine\\Inflector\\Inflector::tableize()`, not `MyInflector::tableize`;
    `Ledger.close` matches the graph's `billing.refunds.Ledger::close`, and `Cart.total` its `src/cart:Cart::total`."""
    want = _norm_symbol(expected)
    return any(s == want or s.endswith(want) and s[-len(want) - 1] in "\\./:" for s in map(_norm_symbol, reported))


def match_locations(spec: ExpectedLocations, analysis: dict[str, Any]) -> LocationsMatch:
    """Expected files must be among the affected files or evidence; expected symbols among the symbols."""
    files = {_norm_path(str(p)) for p in analysis.get("affected_files", [])}
    files |= {_norm_path(str(e.get("path", ""))) for e in analysis.get("evidence", []) if isinstance(e, dict)}
    symbols = [str(s) for s in analysis.get("symbols", [])]
    result = LocationsMatch(passed=False)
    for path in spec.files:
        (result.found_files if path in files else result.missing_files).append(path)
    for symbol in spec.symbols:
        (result.found_symbols if _symbol_found(symbol, symbols) else result.missing_symbols).append(symbol)
    return LocationsMatch(
        passed=not result.missing_files and not result.missing_symbols,
        found_files=result.found_files,
        missing_files=result.missing_files,
        found_symbols=result.found_symbols,
        missing_symbols=result.missing_symbols,
    )
