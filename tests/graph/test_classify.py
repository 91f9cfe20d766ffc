"""The PHPUnit, pytest and node classifiers on real runner output: saved from the runners, and live."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tomllib
from pathlib import Path

import pytest

from project.checks import CheckContext, CheckResult, run_checks
from project.classify import classify
from project.profiles import load_profile
from project.sandbox import SandboxPolicy
from tests.graph.conftest import FIXTURES, ProjectFactory, need_tools, of_kind

SAVED = FIXTURES / "phpunit_output"
CASES = tomllib.loads((SAVED / "cases.toml").read_text())
SAVED_ROOT = "/tmp/php-fixture"


@pytest.mark.parametrize("case", sorted(CASES))
def test_saved_phpunit_output_is_classified(case: str) -> None:
    output = (SAVED / f"{case}.txt").read_text()
    result = classify("phpunit", output, CASES[case]["exit"], root=SAVED_ROOT)
    assert result.outcome == CASES[case]["outcome"]
    assert all(SAVED_ROOT not in (f.location or "") for f in result.failures)


def test_a_failing_assertion_names_the_test_and_its_line() -> None:
    result = classify("phpunit", (SAVED / "assertion.txt").read_text(), 1, root=SAVED_ROOT)
    (failure,) = result.failures
    assert failure.test == r"App\Tests\CalculatorTest::testAddsTwoNumbers"
    assert failure.kind == "assertion"
    assert failure.message == "Failed asserting that 6 is identical to 5."
    assert failure.location == "tests/CalculatorTest.php:14"
    assert result.summary == "Tests: 3, Assertions: 3, Failures: 1."


def test_an_error_points_at_where_it_was_raised() -> None:
    (failure,) = classify("phpunit", (SAVED / "error.txt").read_text(), 2, root=SAVED_ROOT).failures
    assert (
        failure.kind == "error" and "Call to undefined method App\\Calculator::missing()" in failure.message
    )
    assert failure.location == "src/Calculator.php:20"


def test_errors_and_failures_together_are_each_listed() -> None:
    result = classify("phpunit", (SAVED / "mixed.txt").read_text(), 2, root=SAVED_ROOT)
    assert result.outcome == "error"
    assert [(f.kind, f.location) for f in result.failures] == [
        ("error", "src/Calculator.php:20"),
        ("assertion", "tests/CalculatorTest.php:14"),
    ]
    assert result.failures[0].message == "Error: Call to undefined method App\\Calculator::missing()"


def test_a_syntax_error_before_any_test_is_an_error_in_the_file() -> None:
    (failure,) = classify("phpunit", (SAVED / "parse_error.txt").read_text(), 255, root=SAVED_ROOT).failures
    assert failure.kind == "error" and "ParseError" in failure.message
    assert failure.location == "tests/CalculatorTest.php:14"


def test_bootstrap_and_driver_problems_are_the_environment() -> None:
    (bootstrap,) = classify("phpunit", (SAVED / "bootstrap.txt").read_text(), 1, root=SAVED_ROOT).failures
    assert bootstrap.kind == "environment" and 'Cannot open file "vendor/autoload.php"' in bootstrap.message
    (driver,) = classify("phpunit", (SAVED / "missing_driver.txt").read_text(), 2, root=SAVED_ROOT).failures
    assert driver.kind == "environment" and driver.message == "PDOException: could not find driver"


def test_ok_with_a_failing_exit_status_is_not_passed() -> None:
    output = (SAVED / "passed.txt").read_text()
    assert classify("phpunit", output, 0).outcome == "passed"
    assert classify("phpunit", output, 1).outcome == "unknown"
    assert classify("phpunit", "Segmentation fault", 139).outcome == "unknown"
    assert classify("phpunit", "sh: 1: phpunit: not found", 127).outcome == "environment"


@pytest.mark.php
@pytest.mark.parametrize("case", sorted(CASES))
def test_live_phpunit_matches_the_saved_classification(project: ProjectFactory, case: str) -> None:
    need_tools("php", "phpunit", "composer")
    variants = [case] if (FIXTURES / "php_variants" / case).is_dir() else []
    worktree = project("php_project", *variants, installed=case != "bootstrap")
    context = CheckContext(worktree=worktree, profile=load_profile("php"), base_env=dict(os.environ),
                           policy=SandboxPolicy(allow_root=True))
    (test,) = of_kind(run_checks(context, ("test",)), "test")
    assert test.classification is not None
    saved = classify("phpunit", (SAVED / f"{case}.txt").read_text(), CASES[case]["exit"], root=SAVED_ROOT)
    assert test.classification.outcome == saved.outcome
    assert [(f.test, f.kind, f.location) for f in test.classification.failures] == [
        (f.test, f.kind, f.location) for f in saved.failures
    ]


def _run_pytest(worktree: Path) -> tuple[str, int | None]:
    venv_bin = str(Path(sys.executable).parent)
    policy = SandboxPolicy(allow_root=True, env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    context = CheckContext(
        worktree=worktree,
        profile=load_profile("python"),
        policy=policy,
        base_env={"PATH": f"{venv_bin}:/usr/bin:/bin"},
    )
    (test,) = run_checks(context, ("test",)).results
    (run,) = test.runs
    return run.output, run.exit_code


@pytest.fixture
def python_project(tmp_path: Path) -> Path:
    target = tmp_path / "python_project"
    shutil.copytree(FIXTURES / "python_project", target)
    return target


def test_live_pytest_assertion_and_error(python_project: Path) -> None:
    module = python_project / "calc" / "__init__.py"
    text = module.read_text().replace("return a + b", "return a + b + 1")
    module.write_text(text.replace("return a / b", "return a.missing(b)"))
    output, code = _run_pytest(python_project)
    result = classify("pytest", output, code)
    assert result.outcome == "error" and result.summary.startswith("2 failed, 1 passed")
    by_test = {f.test: f for f in result.failures}
    added = by_test["tests/test_calc.py::test_adds_two_numbers"]
    assert (added.kind, added.message, added.location) == (
        "assertion",
        "assert 6 == 5",
        "tests/test_calc.py:6",
    )
    divided = by_test["tests/test_calc.py::test_divides_two_numbers"]
    assert divided.kind == "error" and divided.location == "calc/__init__.py:11"
    assert divided.message == "AttributeError: 'int' object has no attribute 'missing'"


def test_live_pytest_missing_module_is_the_environment(python_project: Path) -> None:
    with (python_project / "tests" / "test_calc.py").open("a") as handle:
        handle.write("import package_nobody_installed\n")
    output, code = _run_pytest(python_project)
    result = classify("pytest", output, code)
    assert result.outcome == "environment"
    (failure,) = result.failures
    assert failure.test == "tests/test_calc.py" and "package_nobody_installed" in failure.message


def test_live_pytest_syntax_error_is_an_error_and_no_tests_is_not_a_pass(python_project: Path) -> None:
    (python_project / "tests" / "test_broken.py").write_text("def test_x(:\n    pass\n")
    output, code = _run_pytest(python_project)
    assert classify("pytest", output, code).outcome == "error"
    shutil.rmtree(python_project / "tests")
    (python_project / "tests").mkdir()
    output, code = _run_pytest(python_project)
    assert code == 5 and classify("pytest", output, code).outcome == "no_tests"


# node: `npm run --if-present test` (saved from npm 11 / node 20's own runner, and live) -------------

NODE_SAVED = FIXTURES / "node_output"


@pytest.mark.parametrize(("case", "code", "outcome"), [
    ("failed", 1, "error"), ("passed", 0, "passed"), ("no_tests", 0, "no_tests"), ("no_script", 0, "no_tests")])
def test_saved_node_output_is_classified(case: str, code: int, outcome: str) -> None:
    result = classify("node", (NODE_SAVED / f"{case}.txt").read_text(), code, root="/tmp/nodet")
    assert result.outcome == outcome


def test_node_failures_name_the_test_its_error_and_line() -> None:
    result = classify("node", (NODE_SAVED / "failed.txt").read_text(), 1, root="/tmp/nodet")
    assert [(f.test, f.kind, f.message, f.location) for f in result.failures] == [
        ("subtracts", "assertion", "AssertionError: Expected values to be strictly equal", "test/a.test.js:4"),
        ("throws", "error", "TypeError: Cannot read properties of null (reading 'x')", "test/a.test.js:5"),
    ]


def _node_package(tmp_path: Path, test: str | None, body: str) -> Path:
    package = tmp_path / "pkg"
    (package / "test").mkdir(parents=True)
    scripts = {"test": test} if test else {}
    (package / "package.json").write_text(json.dumps({"name": "pkg", "version": "1.0.0", "scripts": scripts}))
    (package / "test" / "sum.test.js").write_text(
        'const test = require("node:test");\nconst assert = require("node:assert");\n' + body)
    return package


def _node_check(package: Path) -> CheckResult:
    context = CheckContext(worktree=package, profile=load_profile("typescript"), base_env=dict(os.environ),
                           policy=SandboxPolicy(allow_root=True))
    (test,) = of_kind(run_checks(context, ("test",)), "test")
    return test


def test_live_npm_test_script_through_the_typescript_profile(tmp_path: Path) -> None:
    need_tools("node", "npm")
    failing = _node_package(tmp_path, "node --test", 'test("sums", () => { assert.strictEqual(1 + 1, 3); });\n')
    result = _node_check(failing)
    assert result.status == "failed" and result.classification is not None
    assert [(f.test, f.kind, f.location) for f in result.classification.failures] == [
        ("sums", "assertion", "test/sum.test.js:3")]
    (failing / "test" / "sum.test.js").write_text(
        'const test = require("node:test");\nconst assert = require("node:assert");\n'
        'test("sums", () => { assert.strictEqual(1 + 1, 2); });\n')
    assert _node_check(failing).status == "passed"


def test_live_package_without_a_test_script_runs_no_test(tmp_path: Path) -> None:
    need_tools("node", "npm")
    result = _node_check(_node_package(tmp_path, None, ""))
    assert (result.status, result.reason) == ("not_run", "the test command ran no tests")
