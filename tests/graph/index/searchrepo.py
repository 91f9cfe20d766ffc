"""A small real PHP project in a real git repository, for the search and task-index tests."""

from __future__ import annotations

import subprocess
from pathlib import Path

from project.index import search_store
from project.index.chunks import chunk_file
from project.index.db import Connection
from project.index.embed import Embedder
from project.index.parse import parse_source

FILES = {
    "src/Http/RetryPolicy.php": """<?php
namespace App\\Http;

use App\\Support\\Clock;

/**
 * Decides when a failed HTTP request is tried again.
 */
final class RetryPolicy
{
    public const MAX_ATTEMPTS = 5;

    private int $baseDelayMs = 100;

    /**
     * Exponential backoff delay before the next attempt.
     */
    public function backoffDelay(int $attempt): int
    {
        return $this->baseDelayMs * (2 ** $attempt);
    }

    public function shouldRetry(int $statusCode, int $attempt): bool
    {
        return $attempt < self::MAX_ATTEMPTS && $statusCode >= 500;
    }
}
""",
    "src/User/UserRepository.php": """<?php
namespace App\\User;

class UserRepository
{
    private array $users = [];

    public function findById(int $id): ?User
    {
        return $this->users[$id] ?? null;
    }

    public function save(User $user): void
    {
        $this->users[$user->id] = $user;
    }
}
""",
    "src/helpers.php": """<?php
namespace App;

function format_price(int $cents, string $currency = 'EUR'): string
{
    return sprintf('%.2f %s', $cents / 100, $currency);
}

const DEFAULT_LOCALE = 'en_GB';
register_shutdown_function(static fn () => error_log('shutting down'));
""",
    "README.md": "# demo\nNot PHP, not indexed.\n",
}


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


def make_repo(root: Path, files: dict[str, str] | None = None) -> Path:
    """Create and commit a repository at `root`; return it."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "t@example.invalid")
    git(root, "config", "user.name", "t")
    for rel, text in (files or FILES).items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    commit(root, "initial")
    return root


def commit(root: Path, message: str) -> str:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD")


def index_files(conn: Connection, files: dict[str, str], embedder: Embedder | None) -> None:
    """Fill the search tables of `conn` straight from `files` (no git, no graph store)."""
    search_store.ensure_schema(conn, embedder)
    for rel, text in files.items():
        if not rel.endswith(".php"):
            continue
        parsed = parse_source(rel, text.encode())
        search_store.replace_file(conn, rel, parsed.content_hash, chunk_file(rel, text, parsed.symbols))
    if embedder is not None:
        search_store.embed_pending(conn, embedder)
