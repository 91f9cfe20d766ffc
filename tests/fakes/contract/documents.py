"""Where the forges' own contract files are, and loading them once per process.

The files (GitHub's OpenAPI and webhooks descriptions, GitLab's API response schemas) are not part of
this repository: they sit read-only in a `shared/forge-contract` folder beside the checkout (CI places
its clean clone there) or beside one of its parents (a worktree under a folder of worktrees). On a
laptop without them the contract checks are off and the tests that need them skip; with
FORGEBOT_REQUIRE_TOOLS=1 those tests fail instead (`tests.tools.need`).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
SAMPLES = ROOT / "tests" / "fixtures" / "forge-samples"


@cache
def contract_dir() -> Path | None:
    """The nearest `shared/forge-contract` beside the checkout or one of its parents; None: absent."""
    for parent in ROOT.parents:
        found = parent / "shared" / "forge-contract"
        if (found / "github" / "api.github.com.json").is_file():
            return found
    return None


def available() -> bool:
    return contract_dir() is not None


def _path(*parts: str) -> Path:
    found = contract_dir()
    if found is None:
        raise FileNotFoundError("shared/forge-contract is not beside this checkout")
    return found.joinpath(*parts)


@cache
def github_rest() -> dict[str, Any]:
    """GitHub's REST description (OpenAPI 3.0.3), read once per process (~0.3 CPU-s)."""
    data: dict[str, Any] = json.loads(_path("github", "api.github.com.json").read_bytes())
    return data


@cache
def github_webhooks() -> dict[str, Any]:
    """GitHub's webhooks description (OpenAPI 3.1), read once per process."""
    data: dict[str, Any] = json.loads(_path("github", "webhooks.api.github.com.json").read_bytes())
    return data


def gitlab_schemas() -> Path:
    """The folder of GitLab's API response schemas (relative `$ref`s resolve inside it)."""
    return _path("gitlab", "schemas")
