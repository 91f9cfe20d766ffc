"""The forge calls the product makes that no scenario happens to make: each once through the real
adapter, so every operation of the recorded forge surface (docs/forges.md) is met by the suite and
checked against the forge's contract.
"""

from __future__ import annotations

from foundation.forge import CommentRef, Reaction
from tests.bot.forge.conftest import Backend
from tests.fakes.forge_http import FakeForgeState


async def test_a_diff_comment_is_edited_and_reacted_to(http_backend: Backend, http_state: FakeForgeState) -> None:
    change = http_backend.seed_change(7)
    forge = http_backend.name
    if forge == "github":
        thread = http_state.add_thread(("github", http_backend.repo.project, "change", 7), "note", review=True,
                                       position={"path": "src/app.php", "line": 4, "side": "RIGHT"})
        ref = CommentRef(target=change, id=int(thread.id), thread=thread.id, review=True)
    else:
        thread = http_state.add_thread(("gitlab", http_backend.repo.project, "change", 7), "note", individual=False)
        ref = CommentRef(target=change, id=thread.comments[0].id, thread=thread.id)
    await http_backend.forge.edit_comment(ref, "note, amended")
    await http_backend.forge.add_reaction(ref, Reaction.EYES)
    assert thread.comments[0].body == "note, amended" and thread.comments[0].reactions


async def test_a_change_itself_is_reacted_to(http_backend: Backend, http_state: FakeForgeState) -> None:
    change = http_backend.seed_change(7)
    await http_backend.forge.add_reaction(change, Reaction.THUMBS_UP)
    assert http_state.changes[(http_backend.forge_name, http_backend.repo.project, 7)].reactions
