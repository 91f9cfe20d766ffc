"""Under FORGEBOT_REQUIRE_TOOLS=1 (CI) a test whose tool, server or namespace is missing fails the run.

A CI machine without user namespaces, MariaDB or PHP must not report green without having checked
what those tests check. Each case runs real tests of the suite in a pytest subprocess, with the
variable set and the thing taken away (PATH without `unshare` or `php`, MariaDB pointed at a closed
port): they must fail, and nothing may be skipped. Without the variable the same tests skip.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# a namespace-isolated check, a MariaDB database test and a PHP test, each needing what is taken away
NEEDING = (
    "tests/graph/test_sandbox.py::test_isolated_checks_have_no_network",
    "tests/graph/test_database_tools.py::test_mariadb_errors_never_show_the_password",
    "tests/graph/index/test_reference.py::test_fixtures_pass_php_lint",
)
KEPT_TOOLS = ("git", "sh", "env")  # what the collection and the fixtures themselves run


def _closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # closed again when the socket is


def _counts(done: subprocess.CompletedProcess[str]) -> dict[str, int]:
    """pytest's last line (`1 failed, 2 errors in 6.47s`) as counts by outcome."""
    last = done.stdout.strip().splitlines()[-1].split(" in ")[0]
    pairs = (part.strip().split(" ", 1) for part in last.split(","))
    return {{"error": "errors"}.get(outcome, outcome): int(number) for number, outcome in pairs}


def _run(tmp_path: Path, required: bool) -> subprocess.CompletedProcess[str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for tool in KEPT_TOOLS:
        found = shutil.which(tool)
        assert found is not None
        if not (bin_dir / tool).exists():
            (bin_dir / tool).symlink_to(found)
    env = {key: value for key, value in os.environ.items() if not key.startswith(("FORGEBOT_", "PYTEST_"))}
    env.update(PATH=str(bin_dir), TEST_MARIADB_URL=f"mysql://root@127.0.0.1:{_closed_port()}/test")
    if required:
        env["FORGEBOT_REQUIRE_TOOLS"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "-n", "0", "-rfEs",
         "-o", "addopts=", *NEEDING],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False,
    )


@pytest.mark.slow
def test_required_tools_turn_every_missing_one_into_a_failure(tmp_path: Path) -> None:
    done = _run(tmp_path, required=True)
    counts = _counts(done)  # a fixture that fails is an error, a test body that fails a failure
    assert counts.get("failed", 0) + counts.get("errors", 0) == 3 and set(counts) <= {"failed", "errors"}, (
        done.stdout[-3000:])
    for missing in ("user namespaces", "MariaDB at 127.0.0.1", "`php`"):
        assert missing in done.stdout, (missing, done.stdout[-3000:])


@pytest.mark.slow
def test_without_the_variable_the_same_tests_skip(tmp_path: Path) -> None:
    done = _run(tmp_path, required=False)
    assert _counts(done) == {"skipped": 3}, done.stdout[-3000:]
