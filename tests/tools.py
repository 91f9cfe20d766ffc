"""What a test needs from the machine: tools on PATH and servers, skipped or required.

On a laptop a test whose tool is missing is skipped; with FORGEBOT_REQUIRE_TOOLS=1 (as `.ci/run`
sets it) the same absence fails the test, so CI never passes by skipping. The variable is read at
import time, before the autouse fixture that clears FORGEBOT_* variables for each test.
"""

from __future__ import annotations

import os
import shutil

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
