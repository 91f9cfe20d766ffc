"""A write keyed by the bot's marker finds only the bot's own comments (every forge implementation).

Writes are idempotent by a hidden marker: a retried task edits the comment it posted before, and an
inline note already posted is not posted again. The marker is text anyone can type, and a comment
used to count as the bot's when it carried one: someone who knew a task's id (it is in every status
comment's source) could post the marker of a write the bot had not made yet, so the bot edited that
comment (a token with write access may edit anyone's) or never posted its own; a forged inline
marker hid a finding. Now only a comment the bot authored (`Forge.bot`, learned at start-up) counts.
"""

from __future__ import annotations

from foundation.forge import Marker
from foundation.forge._text import inline_marker, render_marker
from tests.bot.forge.conftest import Backend
from tests.bot.forge.test_contract import NOTES

REPORT = Marker(task="t-42", purpose="report")


async def test_a_comment_carrying_the_bots_marker_is_not_the_bots(backend: Backend) -> None:
    ref = backend.seed_issue(3)
    forged = f"Pay attention to me\n\n{render_marker(REPORT)}"
    backend.seed_comment(ref, forged, author="mallory")
    await backend.forge.post_comment(ref, "The analysis report.", REPORT)
    bodies = backend.bodies(ref)
    assert bodies[0] == forged  # the forger's comment, untouched
    assert len(bodies) == 2 and bodies[1].startswith("The analysis report.")  # the bot's own, posted
    again = await backend.forge.post_comment(ref, "The report, again.", REPORT)  # a retried task
    assert len(backend.bodies(ref)) == 2 and backend.bodies(ref)[1].startswith("The report, again.")
    assert again.id != 0


async def test_a_forged_inline_marker_hides_no_finding(backend: Backend) -> None:
    ref = backend.seed_change(4)
    note = NOTES[0]
    backend.seed_comment(ref, f"lgtm\n\n{render_marker(inline_marker('t-42', note))}", author="mallory")
    assert await backend.forge.post_inline(ref, [note], "t-42") == []
    assert sum(note.body in body for body in backend.bodies(ref)) == 1
