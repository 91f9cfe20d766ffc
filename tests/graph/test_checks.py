"""Checks on real fixture projects: composer, PHPUnit, php -l, phpcs, pytest, ruff; honest statuses."""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import sys
import zipfile
from pathlib import Path

import pytest

from foundation.settings import SandboxSettings, Settings
from project.checks import CheckContext, CheckReport, context_for, matching_files, run_checks
from project.profiles import Profile, load_profile
from project.repoconfig import parse_repo_config
from project.sandbox import SandboxPolicy
from tests.graph.conftest import FIXTURES, ProjectFactory, need, need_tools, of_kind
from tests.tools import need_namespaces

SECRET_ENV = {"FORGEBOT_GITLAB__TOKEN": "glpat-checks-leak", "OPENAI_API_KEY": "sk-checks-leak"}


def _php(worktree: Path, changed: tuple[str, ...] = (), profile: Profile | None = None) -> CheckContext:
    return CheckContext(
        worktree=worktree,
        profile=profile or load_profile("php"),
        changed_files=changed,
        policy=SandboxPolicy(allow_root=True),
        base_env={**os.environ, **SECRET_ENV},
    )


def _statuses(report: CheckReport) -> dict[str, str]:
    return {result.name: result.status for result in report.results}


@pytest.mark.php
def test_php_project_passes_install_tests_and_lint(project: ProjectFactory) -> None:
    need_tools("php", "phpunit", "composer", "phpcs")
    worktree = project("php_project")
    report = run_checks(_php(worktree, ("src/Calculator.php", "tests/CalculatorTest.php")))
    assert _statuses(report) == {
        "install": "passed",
        "test": "passed",
        "smoke": "disabled",
        "php-lint": "passed",
        "phpcs": "passed",
    }
    (install,) = of_kind(report, "install")
    assert "--no-scripts" in (install.command or "")
    assert "no_network" in install.runs[0].enforced  # the repository did not ask for network
    (test,) = of_kind(report, "test")
    assert not (worktree / "vendor").exists()  # on the run's layer, gone with it: the worktree is untouched
    assert test.classification is not None and test.classification.outcome == "passed"
    assert "no_network" in test.runs[0].enforced or "no_network" in test.runs[0].not_enforced
    php_lint = report.results[3]
    assert php_lint.files == ("src/Calculator.php", "tests/CalculatorTest.php") and len(php_lint.runs) == 2


@pytest.mark.php
def test_failing_assertion_is_failed_and_classified(project: ProjectFactory) -> None:
    need_tools("php", "phpunit")
    worktree = project("php_project", "assertion", installed=True)
    (test,) = run_checks(_php(worktree), ("test",)).results
    assert test.status == "failed" and test.reason.startswith("assertion: Tests: 3")
    assert "Failed asserting that 6 is identical to 5." in test.output


@pytest.mark.php
def test_without_install_phpunit_fails_on_the_environment(project: ProjectFactory) -> None:
    need_tools("php", "phpunit")
    profile = parse_repo_config("profile: php\ncommands:\n  install: false\n").resolve_profile()
    report = run_checks(_php(project("php_project"), profile=profile), ("install", "test"))
    assert _statuses(report) == {"install": "disabled", "test": "failed"}
    (test,) = of_kind(report, "test")
    assert test.classification is not None and test.classification.outcome == "environment"


@pytest.mark.php
def test_a_syntax_error_fails_php_lint_and_the_tests(project: ProjectFactory) -> None:
    need_tools("php", "phpunit")
    worktree = project("php_project", "parse_error", installed=True)
    report = run_checks(_php(worktree, ("tests/CalculatorTest.php",)), ("test", "lint"))
    assert report.results[0].status == "failed"
    php_lint = next(r for r in report.results if r.name == "php-lint")
    assert php_lint.status == "failed" and "syntax error" in php_lint.output
    assert "tests/CalculatorTest.php on line 14" in php_lint.output


@pytest.mark.php
def test_phpcs_reports_psr12_violations_on_changed_files_only(project: ProjectFactory) -> None:
    need_tools("php", "phpcs")
    worktree = project("php_project", "style")
    report = run_checks(_php(worktree, ("src/Greeter.php",)), ("lint",))
    assert _statuses(report) == {"php-lint": "passed", "phpcs": "failed"}
    phpcs = report.results[1]
    assert "--standard=PSR12" in (phpcs.command or "") and phpcs.files == ("src/Greeter.php",)
    assert "Greeter.php:7:" in phpcs.output and "Opening brace of a class" in phpcs.output
    untouched = run_checks(_php(worktree, ("src/Calculator.php",)), ("lint",))
    assert _statuses(untouched) == {"php-lint": "passed", "phpcs": "passed"}


@pytest.mark.php
def test_a_project_ruleset_replaces_psr12(project: ProjectFactory) -> None:
    need_tools("php", "phpcs")
    worktree = project("php_project", "style")
    rule = '<rule ref="Generic.PHP.DisallowShortOpenTag"/>'
    ruleset = f'<?xml version="1.0"?>\n<ruleset name="loose">{rule}</ruleset>\n'
    (worktree / "phpcs.xml").write_text(ruleset)
    report = run_checks(_php(worktree, ("src/Greeter.php",)), ("lint",))
    phpcs = report.results[1]
    assert phpcs.status == "passed" and "PSR12" not in (phpcs.command or "")


def test_nothing_to_lint_and_nothing_to_install_are_not_run(tmp_path: Path) -> None:
    worktree = tmp_path / "plain"
    worktree.mkdir()
    (worktree / "README.md").write_text("no PHP here\n")
    report = run_checks(_php(worktree, ("README.md",)), ("install", "test", "lint"))
    results = {r.name: r for r in report.results}
    assert results["install"].status == "not_run" and "composer.json" in results["install"].reason
    assert results["test"].status == "not_run" and "phpunit.xml" in results["test"].reason
    assert (
        results["php-lint"].status == "not_run"
        and "no changed files match *.php" in results["php-lint"].reason
    )


@pytest.mark.php  # runs PHP tools (the review gates, the checks)
def test_a_missing_tool_is_not_run_with_the_reason(project: ProjectFactory, tmp_path: Path) -> None:
    need_tools("php")
    worktree = project("php_project")
    bin_dir = worktree / ".bin"  # inside the worktree: the sandbox's /tmp is private, tmp_path is not in it
    bin_dir.mkdir()
    (bin_dir / "php").symlink_to(shutil.which("php") or "php")
    context = _php(worktree, ("src/Calculator.php",)).model_copy(update={"base_env": {"PATH": str(bin_dir)}})
    report = run_checks(context)
    statuses = _statuses(report)
    assert statuses == {
        "install": "not_run",
        "test": "not_run",
        "smoke": "disabled",
        "php-lint": "passed",
        "phpcs": "not_run",
    }
    assert report.results[-1].reason == "none of vendor/bin/phpcs, phpcs found"


def test_install_failure_stops_tests_and_smoke(project: ProjectFactory) -> None:
    profile = parse_repo_config(
        "commands:\n  install: 'echo cannot resolve >&2; exit 2'\n  smoke: 'true'\n  lint: false\n"
    ).resolve_profile()
    report = run_checks(_php(project("php_project"), profile=profile))
    assert _statuses(report) == {
        "install": "failed",
        "test": "not_run",
        "smoke": "not_run",
        "lint": "disabled",
    }
    assert report.results[0].reason == "exit status 2" and "cannot resolve" in report.results[0].output
    assert report.results[1].reason == "install failed"


def test_a_check_that_reads_the_environment_finds_no_secret(project: ProjectFactory) -> None:
    profile = parse_repo_config("commands:\n  install: false\n  test: env\n").resolve_profile()
    (test,) = run_checks(_php(project("php_project"), profile=profile), ("test",)).results
    assert test.status in ("passed", "failed")  # `env` has no PHPUnit summary: classified, not blurred
    assert "PATH=" in test.output
    for name, value in SECRET_ENV.items():
        assert name not in test.output and value not in test.output


def test_a_check_over_its_timeout_is_killed_and_reported(project: ProjectFactory) -> None:
    profile = parse_repo_config("commands:\n  test: sleep 30\n").resolve_profile()
    context = _php(project("php_project"), profile=profile).model_copy(
        update={"policy": SandboxPolicy(allow_root=True, timeout_seconds=1)}
    )
    (test,) = run_checks(context, ("test",)).results
    assert test.status == "failed" and test.reason.startswith("timed out after 1s")
    assert test.runs[0].status == "timed_out" and test.classification is None


def test_changed_paths_outside_the_repository_are_refused(project: ProjectFactory) -> None:
    worktree = project("php_project")
    (worktree / "link.php").symlink_to(FIXTURES / "php_project" / "src" / "Calculator.php")
    profile = load_profile("php")
    assert matching_files(profile, worktree, ["src/Calculator.php", "link.php", "gone.php", "README"]) == [
        "src/Calculator.php"
    ]
    for bad in ("../outside.php", "/etc/passwd"):
        with pytest.raises(ValueError, match="not a path inside"):
            matching_files(profile, worktree, [bad])


def test_python_profile_runs_pytest_and_ruff(tmp_path: Path) -> None:
    worktree = tmp_path / "python_project"
    shutil.copytree(FIXTURES / "python_project", worktree)
    (worktree / "calc" / "extra.py").write_text("import os\n\n\ndef unused() -> None:\n    pass\n")
    venv_bin = str(Path(sys.executable).parent)
    context = CheckContext(
        worktree=worktree,
        profile=load_profile("python"),
        changed_files=("calc/__init__.py", "calc/extra.py"),
        policy=SandboxPolicy(allow_root=True, env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}),
        base_env={"PATH": f"{venv_bin}:/usr/bin:/bin", **SECRET_ENV},
    )
    report = run_checks(context)
    assert _statuses(report) == {
        "install": "not_run",
        "test": "passed",
        "smoke": "disabled",
        "py-syntax": "passed",
        "ruff": "failed",
    }
    (test,) = of_kind(report, "test")
    assert test.classification is not None and test.classification.outcome == "passed"
    assert test.classification.summary.startswith("3 passed")
    assert "calc/extra.py:1:8: F401" in report.results[-1].output
    assert not list(worktree.rglob("__pycache__")) and not (worktree / ".pytest_cache").exists()


def test_context_for_a_repository_hides_the_data_directory(project: ProjectFactory, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / "tasks.sqlite").write_text("task store\n")
    config = parse_repo_config(
        f"profile: php\ncommands:\n  test: cat {data_dir}/tasks.sqlite\n  timeout_seconds: 30\n  memory_mb: 512\n"
    )
    settings = Settings(_env_file=None, _secrets_dir=None, data_dir=data_dir,  # type: ignore[call-arg]
                        sandbox=SandboxSettings(allow_root=True))
    context = context_for(project("php_project"), config, ["src/Calculator.php"], settings, os.environ)
    assert context.policy.timeout_seconds == 30 and context.policy.memory_bytes == 512 * 1024 * 1024
    assert data_dir.resolve() in context.policy.hidden_paths and Path("/run") in context.policy.hidden_paths
    assert Path("/etc/forgebot/secrets") in context.policy.hidden_paths  # the chart's secrets mount
    need_namespaces()
    (test,) = run_checks(context, ("test",)).results
    assert "hidden_paths" in test.runs[0].enforced
    assert test.status == "failed" and "task store" not in test.output


def _wheel(target: Path) -> str:
    """Write a minimal pure-Python wheel (no build step, so installing it needs no network)."""
    files = {
        "greeting/__init__.py": b"def hello() -> str:\n    return 'hello from the user site'\n",
        "greeting-0.1.dist-info/METADATA": b"Metadata-Version: 2.1\nName: greeting\nVersion: 0.1\n",
        "greeting-0.1.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        b"Tag: py3-none-any\n",
    }
    record = []
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append("greeting-0.1.dist-info/RECORD,,")
    name = "greeting-0.1-py3-none-any.whl"
    with zipfile.ZipFile(target / name, "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
        archive.writestr("greeting-0.1.dist-info/RECORD", "\n".join(record) + "\n")
    return name


def test_python_install_lands_in_the_runs_home_and_later_checks_see_it(tmp_path: Path) -> None:
    need(Path("/usr/bin/python3").is_file(), "/usr/bin/python3")
    worktree = tmp_path / "python_project"
    shutil.copytree(FIXTURES / "python_project", worktree)
    (worktree / "requirements.txt").write_text(f"./{_wheel(worktree)}\n")
    config = parse_repo_config(
        "profile: python\ncommands:\n  smoke: python3 -c 'import greeting; print(greeting.hello())'\n"
    )
    context = CheckContext(
        worktree=worktree, profile=config.resolve_profile(), base_env={"PATH": "/usr/bin:/bin"},
        policy=SandboxPolicy(allow_root=True),
    )
    report = run_checks(context, ("install", "smoke"))
    install, smoke = report.results
    if install.status == "failed" and "No module named pip" in install.output:
        need(False, "pip for /usr/bin/python3")
    assert install.status == "passed", install.output
    assert smoke.status == "passed" and "hello from the user site" in smoke.output
    assert not (Path.home() / ".local" / "lib" / "greeting").exists()
