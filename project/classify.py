"""Test-failure classifier presets: what kind of failure a test run's output shows.

The kind decides what happens next: a failing assertion goes back to the coder as a behaviour
problem, an error (exception, fatal, syntax) as broken code, and an environment problem
(bootstrap file missing, dependency not installed, no tests collected) is reported instead of
being blamed on the change. Presets parse the runner's plain text output, tested on real output.

The output comes from code under review, so a classification is advice for the next role, never
a status: it cannot turn a failed run into a pass (`passed` also needs exit status 0), and gates
must not let "environment" excuse a failed mandatory check.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel

from project.profiles import ClassifierName

FailureKind = Literal["assertion", "error", "environment"]
Outcome = Literal["passed", "assertion", "error", "environment", "no_tests", "unknown"]

_MAX_MESSAGE = 500
# Failures that say the machine, not the code, is wrong.
_ENVIRONMENT = re.compile(
    r"could not find driver|SQLSTATE\[HY000\] \[2002\]|Connection refused|php_network_getaddresses"
    r"|extension .{1,40} (?:is )?(?:not loaded|missing)|requires? (?:the )?ext-|command not found"
    r"|No module named",
    re.I,
)


class TestFailure(BaseModel):
    """One failing test (or a failure before any test ran) with its first useful location."""

    __test__ = False  # not a pytest test class, despite the name

    test: str
    kind: FailureKind
    message: str
    location: str | None = None


class Classification(BaseModel):
    """A run's outcome (the most serious kind found) and each failure."""

    outcome: Outcome
    failures: tuple[TestFailure, ...] = ()
    summary: str = ""


def classify(
    preset: ClassifierName, output: str, exit_code: int | None, root: str | None = None
) -> Classification:
    """Classify a test run's output with `preset`; `root` is stripped from paths in locations."""
    parser = _PRESETS[preset]
    text = output.replace(root.rstrip("/") + "/", "") if root else output
    return parser(text, exit_code)


def _outcome(failures: list[TestFailure]) -> Outcome:
    kinds = {f.kind for f in failures}
    for kind in ("environment", "error", "assertion"):
        if kind in kinds:
            return kind
    return "unknown"


def _kind(default: FailureKind, message: str) -> FailureKind:
    return "environment" if _ENVIRONMENT.search(message) else default


def _clip(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 3] + "..."


# PHPUnit (9 to 11) -----------------------------------------------------------------------------

_PHPUNIT_SECTION = re.compile(r"^There (?:was|were) \d+ (error|failure|warning|risky test)s?:\s*$", re.M)
_PHPUNIT_ITEM = re.compile(r"^\d+\) (\S.*)$", re.M)
_PHPUNIT_SUMMARY = re.compile(r"^(?:OK \(.*\)|OK, but .*|Tests: \d+.*|No tests executed!)\s*$", re.M)
_PHPUNIT_LOCATION = re.compile(r"^(/?[^\s:]+\.php):(\d+)\s*$", re.M)
_PHP_FATAL = re.compile(
    r"^(?:PHP )?(?:Fatal|Parse) error:\s+(.*?)(?: in (\S+\.php)(?::| on line )(\d+))?$", re.M
)
_PHPUNIT_ENV = re.compile(r'^(?:Cannot open file|Could not read|Could not load) ".*$', re.M)


def _phpunit(output: str, exit_code: int | None) -> Classification:
    summary_match = _PHPUNIT_SUMMARY.findall(output)
    summary = summary_match[-1].strip() if summary_match else ""
    failures = _phpunit_sections(output)
    if not failures:
        failures = _phpunit_before_tests(output, exit_code)
    if failures:
        return Classification(outcome=_outcome(failures), failures=tuple(failures), summary=summary)
    if summary == "No tests executed!":
        return Classification(outcome="no_tests", summary=summary)
    if exit_code == 0 and summary.startswith(("OK", "Tests: ")):  # "Tests: ..." after WARNINGS!
        return Classification(outcome="passed", summary=summary)
    return Classification(outcome="unknown", summary=summary or _last_line(output))


def _phpunit_sections(output: str) -> list[TestFailure]:
    failures: list[TestFailure] = []
    sections = list(_PHPUNIT_SECTION.finditer(output))
    for index, section in enumerate(sections):
        if section.group(1) not in ("error", "failure"):
            continue
        end = sections[index + 1].start() if index + 1 < len(sections) else len(output)
        body = output[section.end() : end]
        summary = _PHPUNIT_SUMMARY.search(body)
        body = body[: summary.start()] if summary else body
        default: FailureKind = "assertion" if section.group(1) == "failure" else "error"
        items = list(_PHPUNIT_ITEM.finditer(body))
        for pos, item in enumerate(items):
            text = body[item.end() : items[pos + 1].start() if pos + 1 < len(items) else len(body)]
            message, _, _trace = text.strip().partition("\n\n")
            location = _PHPUNIT_LOCATION.search(text)
            failures.append(
                TestFailure(
                    test=item.group(1).strip(),
                    kind=_kind(default, message),
                    message=_clip(message.removesuffix("\n--")),
                    location=f"{location.group(1)}:{location.group(2)}" if location else None,
                )
            )
    return failures


def _phpunit_before_tests(output: str, exit_code: int | None) -> list[TestFailure]:
    """Problems that stop PHPUnit before any test runs: bootstrap, configuration, fatals."""
    if (bad_file := _PHPUNIT_ENV.search(output)) is not None:
        return [TestFailure(test="(bootstrap)", kind="environment", message=bad_file.group(0).strip())]
    if (fatal := _PHP_FATAL.search(output)) is not None:
        message = fatal.group(1)
        location = f"{fatal.group(2)}:{fatal.group(3)}" if fatal.group(2) else None
        kind = _kind("error", message)
        return [TestFailure(test="(loading)", kind=kind, message=_clip(message), location=location)]
    if exit_code == 127 or (exit_code not in (0, None) and _ENVIRONMENT.search(output)):
        return [TestFailure(test="(runner)", kind="environment", message=_clip(_last_line(output)))]
    return []


# pytest ----------------------------------------------------------------------------------------

_PYTEST_LINE = re.compile(r"^(FAILED|ERROR) (\S+)(?: - (.*))?$", re.M)
# The summary's head, matched at the start of a line stripped of "=" and whitespace. The old one-regex
# form (`^=*\s*(... in [\d.]+s.*?)\s*=*$`, re.M) was quadratic on long space runs and blank lines.
_PYTEST_SUMMARY_HEAD = re.compile(r"(?:\d+ \w+|no tests ran)(?:, \d+ \w+)* in [\d.]+s")
_PYTEST_HEADER = re.compile(r"^_{3,} (.+?) _{3,}$|^={3,}.*$", re.M)
_PYTEST_LOCATION = re.compile(r"^(\S+\.py):(\d+):(?: .*)?$", re.M)


def _pytest(output: str, exit_code: int | None) -> Classification:
    summaries = _pytest_summaries(output)
    summary = summaries[-1] if summaries else ""
    sections = _pytest_sections(output)
    failures = [
        _pytest_failure(m.group(1), m.group(2), m.group(3) or "", sections)
        for m in _PYTEST_LINE.finditer(output)
    ]
    if failures:
        return Classification(outcome=_outcome(failures), failures=tuple(failures), summary=summary)
    if exit_code == 5 or summary.startswith("no tests ran"):
        return Classification(outcome="no_tests", summary=summary)
    if exit_code == 0 and " passed" in summary:
        return Classification(outcome="passed", summary=summary)
    if exit_code in (3, 4, 127):
        # Internal error, usage error (unknown option, missing path) or no pytest at all.
        failure = TestFailure(test="(runner)", kind="environment", message=_clip(_last_line(output)))
        return Classification(outcome="environment", failures=(failure,), summary=summary)
    return Classification(outcome="unknown", summary=summary or _last_line(output))


def _pytest_summaries(output: str) -> list[str]:
    """Every `N passed, M failed in 1.2s` line, without its "=" frame: linear in the output's length."""
    found = []
    for line in output.split("\n"):
        content = line.lstrip("=").lstrip()
        if _PYTEST_SUMMARY_HEAD.match(content):
            found.append(content.rstrip("=").rstrip())
    return found


@dataclass(frozen=True)
class _Section:
    """What a traceback section says: its last `E   ` line and its last `path.py:line` location."""

    raised: str | None
    location: str | None


def _pytest_sections(output: str) -> dict[str, _Section]:
    """Traceback sections by header title (`test_name`, `Class.test`, `ERROR collecting path`).

    Each section is read once here: the summary's FAILED lines may all name the same test, and
    reading its section again per line made the classification quadratic in the output's size.
    """
    headers = list(_PYTEST_HEADER.finditer(output))
    sections: dict[str, _Section] = {}
    for index, header in enumerate(headers):
        if header.group(1) and header.group(1) not in sections:
            end = headers[index + 1].start() if index + 1 < len(headers) else len(output)
            sections[header.group(1)] = _read_section(output[header.end() : end])
    return sections


def _read_section(section: str) -> _Section:
    raised = [line[4:].strip() for line in section.splitlines() if line.startswith("E   ")]
    locations = list(_PYTEST_LOCATION.finditer(section))
    location = f"{locations[-1].group(1)}:{locations[-1].group(2)}" if locations else None
    return _Section(raised[-1] if raised else None, location)


_NO_SECTION = _Section(None, None)


def _pytest_failure(status: str, test: str, message: str, sections: dict[str, _Section]) -> TestFailure:
    path, _, name = test.partition("::")
    if name:
        title = name.replace("::", ".")
    else:
        title = f"ERROR collecting {path}"
    section = sections.get(title, _NO_SECTION)
    if section == _NO_SECTION:  # a failure in a fixture has its section under the setup title
        section = sections.get(f"ERROR at setup of {name.split('::')[-1]}", _NO_SECTION)
    # The short summary clips long messages with "..."; the section's `E   ` line has it whole.
    detail = section.raised if section.raised and (not message or message.endswith("...")) else message or "error"
    kind: FailureKind = "error"
    if status == "FAILED" and _is_assertion(detail):
        kind = "assertion"
    return TestFailure(test=test, kind=_kind(kind, detail), message=_clip(detail), location=section.location)


def _is_assertion(message: str) -> bool:
    return message.startswith(("assert ", "AssertionError", "Failed: DID NOT RAISE"))


def _last_line(output: str) -> str:
    lines = [line for line in output.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


# node (npm scripts: node's own test runner in TAP form, Jest, Mocha) ---------------------------------

_NPM_BANNER = re.compile(r"^> \S+ [\w:-]+\s*$", re.M)  # `> pkg@1.0.0 test`: npm ran the script
_TAP_NOT_OK = re.compile(r"^\s*not ok \d+ - (.+?)\s*$", re.M)
_TAP_ERROR = re.compile(r"^\s*(?:error|name|location): (.+)$", re.M)
_JEST_FAILED = re.compile(r"^\s*● (.+?)\s*$", re.M)
_MOCHA_FAILED = re.compile(r"^\s+\d+\) (.+?):?\s*$", re.M)
_NODE_SUMMARY = re.compile(
    r"^# (?:tests|pass|fail) \d+$|^Tests:\s+.*\d+ total$|^\s*\d+ (?:passing|failing)\b.*$", re.M)
_NODE_NO_TESTS = re.compile(r"^# tests 0$|^No tests found|^\s*0 passing\b", re.M)
_NODE_ENVIRONMENT = re.compile(r"Cannot find module|ERR_MODULE_NOT_FOUND|command not found|: not found$"
                               r"|Missing script:", re.M)


def _node(output: str, exit_code: int | None) -> Classification:
    """`npm run --if-present test` output: a missing script prints nothing and is no test run."""
    summary = " / ".join(m.group(0).strip() for m in _NODE_SUMMARY.finditer(output))
    failures = [_tap_failure(output, m) for m in _TAP_NOT_OK.finditer(output) if not m.group(1).startswith("/")]
    failures += [TestFailure(test=m.group(1), kind=_assertion_or_error(output), message=_clip(m.group(1)))
                 for m in [*_JEST_FAILED.finditer(output), *_MOCHA_FAILED.finditer(output)]]
    if failures:
        return Classification(outcome=_outcome(failures), failures=tuple(failures), summary=summary)
    if exit_code == 0 and (not _NPM_BANNER.search(output) or _NODE_NO_TESTS.search(output)):
        return Classification(outcome="no_tests", summary=summary or "no test script ran")
    if exit_code == 0:
        return Classification(outcome="passed", summary=summary)
    if (environment := _NODE_ENVIRONMENT.search(output)) is not None:
        line = output[output.rfind("\n", 0, environment.start()) + 1:].split("\n", 1)[0]
        failure = TestFailure(test="(runner)", kind="environment", message=_clip(line))
        return Classification(outcome="environment", failures=(failure,), summary=summary)
    return Classification(outcome="unknown", summary=summary or _last_line(output))


def _tap_failure(output: str, match: re.Match[str]) -> TestFailure:
    """A `not ok N - name` block of node's test runner: its error, exception class and location."""
    following = output[match.end():]
    block = following[:following.find("\n  ...")] if "\n  ..." in following else following[:2000]
    fields = {line.split(":", 1)[0].strip(): line.split(":", 1)[1].strip().strip("'\"")
              for line in (m.group(0) for m in _TAP_ERROR.finditer(block))}
    name = fields.get("name", "")
    error = fields.get("error", "")
    if error in ("|-", "|", ">-"):  # a block scalar: its first line says it
        after = block[block.find("error: ") :].split("\n")[1:]
        error = next((line.strip() for line in after if line.strip()), "")
    message = f"{name}: {error}".strip(": ")
    kind: FailureKind = "assertion" if name == "AssertionError" or "ERR_ASSERTION" in block else "error"
    location = fields.get("location") or None
    return TestFailure(test=match.group(1), kind=_kind(kind, message), message=_clip(message or match.group(1)),
                       location=location.rsplit(":", 1)[0] if location else None)


def _assertion_or_error(output: str) -> FailureKind:
    return "assertion" if "AssertionError" in output or "expect(" in output else "error"


_PRESETS: dict[str, Callable[[str, int | None], Classification]] = {
    "phpunit": _phpunit, "pytest": _pytest, "node": _node}
