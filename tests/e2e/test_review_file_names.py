"""A review of a change whose file names git quotes or splits badly: non-ASCII, spaces, quotes.

`git diff` writes `"b/caf\\303\\251.php"` and `b/my file.php` (with a trailing tab on the `+++`
line); the review used to fail the task on such a header (`DiffError: not a diff header`). Through
the receiver, real Redis and the worker, the review now succeeds and anchors its inline comments
on those files by their real names.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from foundation.settings import Settings
from graph.schemas import Finding, Review
from tests.e2e.review_harness import Models, deliver, fake_change, prepare, work
from tests.fakes.forge_http import FakeForgeState
from tests.fakes.model_server import answer
from tests.graph.review.conftest import make_change_repo
from tests.graph.runtime.script import done

NAMES = ("src/café.php", "src/my file.php", 'src/say"hi".php', "src/naïve dir/ünïcode \"q\" x.php")


PROJECT = {"gitlab": "5", "github": "Codertocat/Hello-World"}


@pytest.mark.parametrize("forge", ["gitlab", "github"])
async def test_review_of_files_with_quoted_names(forge: str, settings: Settings, redis_url: str,
                                                 fake_forge: FakeForgeState, tmp_path: Path) -> None:
    repo = make_change_repo(tmp_path / "repo")
    repo.commit({name: f"<?php\nfunction f{i}(): int\n{{\n    return {i};\n}}\n" for i, name in enumerate(NAMES)},
                "odd names")
    prepare(settings, redis_url, fake_forge, repo.root)
    project = PROJECT[forge]
    fake_forge.add_change(forge, project, 1, fake_change(repo))
    review = Review(verdict="request_changes", summary="Odd names reviewed.", verified_criteria=[1, 2], findings=[
        Finding(severity="major", message=f"f{i} returns a constant", path=name, line=4, concern="logic")
        for i, name in enumerate(NAMES)
    ])
    models = Models([done(), answer(Review, review)])
    await deliver(settings, forge, 301, f"file://{repo.root}")
    await work(settings, redis_url, models)
    shown = next(str(m.content) for m in models.reviewer.received[0] if "<diff" in str(m.content))
    assert "return 3;" in shown  # the reviewer saw the files' contents
    threads = fake_forge.threads_of(forge, project, "change", 1)
    path_key, line_key = ("new_path", "new_line") if forge == "gitlab" else ("path", "line")
    inline = {(t.comments[0].position[path_key], t.comments[0].position.get(line_key)): t.comments[0].body
              for t in threads if t.comments[0].position}
    for i, name in enumerate(NAMES):
        assert f"f{i} returns a constant" in inline[(name, 4)]
    summaries = [t.comments[0].body for t in threads if "### Review" in t.comments[0].body]
    assert len(summaries) == 1 and "not anchored" not in summaries[0]
    failures = [c.body for c in fake_forge.comments_on(forge, project, 1, "change") if "could not finish" in c.body]
    assert failures == []
