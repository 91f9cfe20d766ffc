"""FakeForge: the in-memory forge (`foundation.forge.inmemory.MemoryForge`) that tests seed.

The product's in-memory forge only holds what the bot writes and what a local run is given; tests also
need comments written by other people (what a webhook would announce), so seeding lives here.
"""

from foundation.forge import ChangeRef, CommentRef, IssueRef
from foundation.forge.inmemory import MemoryForge


class FakeForge(MemoryForge):
    """The in-memory forge, plus comments by others."""

    def seed_comment(self, target: IssueRef | ChangeRef, body: str, author: str, author_id: int = 0) -> CommentRef:
        """A comment written by someone else (what a webhook would announce)."""
        return self._add(target, body, author=author, author_id=author_id)


__all__ = ["FakeForge"]
