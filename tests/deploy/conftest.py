"""Fixtures for the deploy tests: external linters skip when absent unless FORGEBOT_REQUIRE_TOOLS=1."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.tools import need


@pytest.fixture
def require_tool() -> Callable[[str], str]:
    """Return a tool's path; skip the test when it is missing, or fail in CI (FORGEBOT_REQUIRE_TOOLS=1)."""

    def find(name: str) -> str:
        # tools installed by pip into the running venv are next to its python, maybe not on PATH
        found = shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))
        need(found is not None, name)
        assert found is not None
        return found

    return find
