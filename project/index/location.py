"""Where a checkout's index database lives.

Indexes are derived data kept under the data directory, never inside the checkout: a file written
into the worktree would make the coder's "worktree is clean" check lie.
"""

from __future__ import annotations

import hashlib
from pathlib import Path


def index_path(data_dir: Path, repo_root: Path) -> Path:
    """Return the index database path for the checkout at `repo_root`."""
    root = repo_root.resolve()
    digest = hashlib.sha256(str(root).encode()).hexdigest()[:16]
    return data_dir / "indexes" / f"{root.name}-{digest}" / "index.db"
