"""StatusForge: the in-memory forge, remembering every write of the status comment (or refusing them).

The memory forge keeps only a comment's latest body; the status tests need the history of edits to
see the phases a user would have watched, and a forge that fails exactly the status writes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from foundation.forge import ChangeRef, CommentRef, ForgeUnavailable, IssueRef, Marker
from foundation.forge.models import Reaction
from graph import status
from graph.state import TaskState
from tests.fakes.forge import FakeForge

Target = IssueRef | ChangeRef
_HEAD = re.compile(r"^\*\*(?:Working on it|Status): (.+?)\*\*")


@dataclass
class StatusForge(FakeForge):
    fail_status: bool = False  # refuse the reaction and every status write, as an unavailable forge would
    status_bodies: list[str] = field(default_factory=list)

    async def post_comment(self, target: Target, body: str, marker: Marker | None = None) -> CommentRef:
        if marker is not None and marker.purpose == status.PURPOSE:
            if self.fail_status:
                raise ForgeUnavailable("502 on the status comment")
            self.status_bodies.append(body)
        return await super().post_comment(target, body, marker)

    async def add_reaction(self, target: Target | CommentRef, reaction: Reaction) -> None:
        if self.fail_status:
            raise ForgeUnavailable("502 on the reaction")
        await super().add_reaction(target, reaction)

    def status_comments(self, target: Target) -> list[str]:
        """The status comments on `target` as they read now (there must be at most one)."""
        return [body for body in self.comments.get(target, []) if ":purpose=status -->" in body]

    def others(self, target: Target) -> list[str]:
        """Everything else the task wrote on `target` (reports, reviews, questions)."""
        return [body for body in self.comments.get(target, []) if ":purpose=status -->" not in body]

    @property
    def phases(self) -> list[str]:
        """The phase each status write showed, in order."""
        return [match.group(1) for body in self.status_bodies if (match := _HEAD.match(body))]


async def acknowledged(forge: FakeForge, state: TaskState, trigger: Target | CommentRef) -> TaskState:
    """What the job does before the graph runs: react, post the status comment, hand its id to the run."""
    comment = await status.acknowledge(forge, state, trigger)
    return TaskState(**{**state, "status_comment_id": comment})
