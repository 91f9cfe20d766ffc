"""A task checkout without a forge's git server: a local copy of a fixture project, indexed."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from foundation.forge import Forge, RepoRef
from foundation.settings import Settings
from graph.checkout import Checkout, index_checkout
from tests.repos import FIXTURES, init_repo


def php_project(parent: Path) -> Path:
    """The PHP fixture project as a git repository under `parent`."""
    return init_repo(shutil.copytree(FIXTURES / "php_project", parent / "php_project"))


def local_checkout(root: Path, key: str = "local-fixture") -> Checkout:
    """A `Checkout` that hands every task the repository at `root` (and its real index under `key`)."""

    async def checkout(settings: Settings, forge: Forge, repo: RepoRef, task_id: str) -> dict[str, Any]:
        return {"workspace": str(root), **index_checkout(settings.data_dir, key, root, task_id)}

    return checkout
