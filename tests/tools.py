"""What a test needs from the machine: tools, servers and kernel features, skipped or required.

The one home of "skip here, fail in CI": on a laptop a test whose tool, server or namespace support is
missing is skipped; with FORGEBOT_REQUIRE_TOOLS=1 (as `.ci/run` and the pipeline set it) the same
absence fails the test, so CI never passes by skipping what it was meant to check. The variable is
read at import time: the autouse fixture that clears FORGEBOT_* variables for each test runs before
any function-scoped fixture, so a fixture reading the environment itself would always see it unset.
"""

from __future__ import annotations

import os
import shutil
import socket

import pytest

REQUIRE_TOOLS = os.environ.get("FORGEBOT_REQUIRE_TOOLS") == "1"


def need(available: bool, what: str) -> None:
    """Skip the test when `what` is missing, or fail it when tools are required."""
    if available:
        return
    if REQUIRE_TOOLS:
        pytest.fail(f"{what} is required (FORGEBOT_REQUIRE_TOOLS=1) but not available")
    pytest.skip(f"{what} not available")


def need_tools(*names: str) -> None:
    """Skip (or fail) unless every executable in `names` is on PATH."""
    for name in names:
        need(shutil.which(name) is not None, f"`{name}`")


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    """Whether a server listens on `host:port` (a database the tests use)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def need_namespaces() -> None:
    """Skip (or fail) where the check sandbox cannot have its user namespaces."""
    from project.sandbox import probe_isolation

    probe = probe_isolation()
    need(probe.available, f"user namespaces for the check sandbox ({probe.reason})")


def need_check_pytest() -> None:
    """Skip (or fail) unless the `python3` a check finds on the sandbox's PATH has pytest: the Python
    profile's test check runs `python3 -m pytest` (CI installs it; Debian: python3-pytest)."""
    import subprocess

    python = shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin")
    found = python is not None and subprocess.run([python, "-c", "import pytest"], capture_output=True,
                                                  check=False, timeout=60).returncode == 0
    need(found, "pytest for the checks' python3")
