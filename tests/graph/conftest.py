"""Fixtures for the profile, check, classifier and database tests: fixture projects as real git
repositories, required tools, and database servers.

Tools and servers are skipped when absent, unless FORGEBOT_REQUIRE_TOOLS=1 (read at import time,
before the autouse fixture that clears FORGEBOT_* variables), in which case their absence fails.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from project.checks import CheckReport, CheckResult
from tests.repos import FIXTURES, git, init_repo
from tests.tools import REQUIRE_TOOLS, need, need_tools, port_open

POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/test"
__all__ = ["FIXTURES", "REQUIRE_TOOLS", "git", "init_repo", "need", "need_tools"]  # their homes moved; names kept


ProjectFactory = Callable[..., Path]


@pytest.fixture(scope="session")
def php_vendor(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`vendor/` of the PHP fixture project, made once by a real `composer install` (offline: no deps)."""
    need_tools("composer")
    work = tmp_path_factory.mktemp("composer") / "php_project"
    shutil.copytree(FIXTURES / "php_project", work)
    subprocess.run(
        ["composer", "install", "-q", "--no-scripts", "--no-plugins", "--no-interaction"],
        cwd=work,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(work.parent), "CI": "1"},
        check=True,
        timeout=120,
    )
    return work / "vendor"


@pytest.fixture
def project(tmp_path: Path, request: pytest.FixtureRequest) -> ProjectFactory:
    """Copy a fixture project into a fresh git repository, then lay variant overlays over it.

    `project("php_project", "assertion")` gives the PHP project whose Calculator::add is wrong;
    overlays are in `tests/fixtures/php_variants/<name>/` and are left uncommitted, like a change.
    `installed=True` adds the session's `vendor/` (ignored by the fixture's .gitignore).
    """

    def make(name: str, *variants: str, installed: bool = False) -> Path:
        target = tmp_path / name
        shutil.copytree(FIXTURES / name, target)
        init_repo(target)
        for variant in variants:
            shutil.copytree(FIXTURES / "php_variants" / variant, target, dirs_exist_ok=True)
        if installed:
            shutil.copytree(request.getfixturevalue("php_vendor"), target / "vendor", symlinks=True)
        return target

    return make


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A throw-away database on the test Postgres server, so no other suite's tables show up."""
    import uuid

    import psycopg

    need(port_open(5432), "PostgreSQL at 127.0.0.1:5432")
    name = f"forgebot_dbtools_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    try:
        yield POSTGRES_URL.rpartition("/")[0] + "/" + name
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def of_kind(report: CheckReport, kind: str) -> list[CheckResult]:
    """The results of one kind in a report (lint has one per linter)."""
    return [r for r in report.results if r.kind == kind]
