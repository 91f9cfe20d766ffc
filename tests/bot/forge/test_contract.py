"""One behavioural suite × {FakeForge (both flavours), GitLabForge@fake HTTP, GitHubForge@fake HTTP}.

Each test states what a user would see on the forge after the bot acted; the fake HTTP forge
rejects diff positions the real forges reject, so anchoring mistakes fail here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from foundation.forge import (
    AccessLevel,
    Capability,
    ChangeRequest,
    ForgeError,
    ForgeNotFound,
    ForgeUnsupported,
    ForgeUser,
    InlineNote,
    LineKind,
    Marker,
    Reaction,
)
from foundation.forge._text import render_marker
from tests.bot.forge.conftest import Backend

STATUS = Marker(task="t-42", purpose="status")


async def test_get_issue_reads_fields_and_comments(backend: Backend) -> None:
    ref = backend.seed_issue(3, title="Add a file API", body="Create, update, delete.", labels=("backend", "api"))
    backend.seed_comment(ref, "Which storage?", author="bob")
    issue = await backend.forge.get_issue(ref)
    assert (issue.title, issue.body, issue.author) == ("Add a file API", "Create, update, delete.", "alice")
    assert set(issue.labels) == {"backend", "api"}
    assert [(c.author, c.body) for c in issue.comments] == [("bob", "Which storage?")]


async def test_an_issue_read_for_its_own_fields_lists_no_comment(backend: Backend) -> None:
    """The confidentiality check and a review's closed issues read only the issue: listing every note of
    a long thread twice a task was paid for nothing."""
    ref = backend.seed_issue(3, title="Add a file API")
    backend.seed_comment(ref, "Which storage?", author="bob")
    issue = await backend.forge.get_issue(ref, comments=False)
    assert issue.title == "Add a file API" and issue.comments == ()
    if backend.state is not None:  # the HTTP adapters: no request for the thread at all
        listed = [path for method, path, _ in backend.state.log if method == "GET" and path.endswith(
            ("/issues/3/discussions", "/issues/3/notes", "/issues/3/comments"))]
        assert listed == [], listed


async def test_unknown_issue_is_not_found(backend: Backend) -> None:
    backend.seed_issue(3)
    with pytest.raises(ForgeNotFound):
        await backend.forge.get_issue(backend.seed_issue(3).model_copy(update={"number": 999}))


async def test_list_closed_reads_closed_issues_and_merged_changes_since_a_time(backend: Backend) -> None:
    old, new, still_open = backend.seed_issue(3, title="Old"), backend.seed_issue(4, title="New"), backend.seed_issue(6)
    backend.close(old, "2026-01-02T00:00:00Z")
    backend.close(new, "2026-01-05T00:00:00Z")
    merged, _open = backend.seed_change(7), backend.seed_change(8, source_branch="feature/other")
    backend.close(merged, "2026-01-04T00:00:00Z")
    issues = await backend.forge.list_closed(backend.repo, "issue", "", 10)
    assert [(c.ref.number, c.title, c.author) for c in issues] == [(3, "Old", "alice"), (4, "New", "alice")]
    since = await backend.forge.list_closed(backend.repo, "issue", "2026-01-03T00:00:00Z", 10)
    assert [c.ref.number for c in since] == [4]
    assert [c.ref.number for c in await backend.forge.list_closed(backend.repo, "issue", "", 1)] == [4]  # newest
    (change,) = await backend.forge.list_closed(backend.repo, "change", "", 10)
    assert (change.ref.kind, change.ref.number, change.title, change.body) == ("change", 7, "File API", "Adds it.")
    assert change.updated_at.startswith("2026-01-04")
    assert still_open.number not in [c.ref.number for c in issues]


async def test_post_then_edit_comment_in_place(backend: Backend) -> None:
    ref = backend.seed_issue(3)
    comment = await backend.forge.post_comment(ref, "Working on it: phase 1")
    await backend.forge.edit_comment(comment, "Working on it: phase 2")
    assert backend.bodies(ref) == ["Working on it: phase 2"]


async def test_retried_status_comment_is_edited_not_duplicated(backend: Backend) -> None:
    ref = backend.seed_issue(3)
    first = await backend.forge.post_comment(ref, "phase 1", STATUS)
    again = await backend.forge.post_comment(ref, "phase 2", STATUS)  # the retried task
    assert first.id == again.id
    (body,) = backend.bodies(ref)
    assert body.startswith("phase 2") and render_marker(STATUS) in body
    other = await backend.forge.post_comment(ref, "report", Marker(task="t-42", purpose="report"))
    assert other.id != first.id and len(backend.bodies(ref)) == 2


async def test_reply_threads_or_quotes(backend: Backend) -> None:
    ref = backend.seed_issue(3)
    backend.seed_comment(ref, "Use S3 please\nand keep it simple", author="bob")
    (question,) = await backend.forge.list_comments(ref)
    answer = Marker(task="t-42", purpose="answer")
    await backend.forge.reply(question.ref, "Noted, S3 it is.", answer)
    await backend.forge.reply(question.ref, "Noted, S3 it is.", answer)  # retried: no second reply
    bodies = backend.bodies(ref)
    assert len(bodies) == 2 and "Noted, S3 it is." in bodies[1]
    if Capability.ISSUE_THREADS in backend.forge.capabilities:
        asked, answered = await backend.forge.list_comments(ref)
        assert asked.ref.thread and answered.ref.thread == asked.ref.thread
    else:
        assert "> Use S3 please" in bodies[1] and "bob" in bodies[1]


async def test_read_change_with_shas_and_hunks(backend: Backend) -> None:
    ref = backend.seed_change(5)
    change = await backend.forge.get_change(ref)
    assert (change.source_branch, change.target_branch, change.title) == ("feature/files", "main", "File API")
    assert change.head_sha == "c" * 40 and change.base_sha == "b" * 40
    by_path = {f.new_path: f for f in change.files}
    assert by_path["src/Mail/Mailer.php"].old_path == "src/Legacy/Mailer.php"
    assert [by_path[p].status for p in ("src/app.php", "src/Mail/Mailer.php", "src/Added.php", "src/Gone.php")] == [
        "modified", "renamed", "added", "deleted"]
    first = by_path["src/app.php"].hunks[0]
    context = [(ln.old_line, ln.new_line) for ln in first.lines if ln.kind is LineKind.CONTEXT]
    assert (5, 6) in context  # a context line whose numbers differ on the two sides
    added = [ln.new_line for h in by_path["src/app.php"].hunks for ln in h.lines if ln.kind is LineKind.ADDED]
    assert added == [3, 4, 22]


NOTES = [
    InlineNote(path="src/app.php", line=3, body="added line"),
    InlineNote(path="src/app.php", line=3, side="old", body="removed line"),
    InlineNote(path="src/app.php", line=6, body="context line"),
    InlineNote(path="src/app.php", line=4, start_line=3, body="multi-line range"),
    InlineNote(path="src/Mail/Mailer.php", line=2, body="renamed file"),
    InlineNote(path="src/Added.php", line=3, body="new file"),
    InlineNote(path="src/Gone.php", line=2, side="old", body="deleted file"),
]
OFF_DIFF = [InlineNote(path="src/app.php", line=15, body="not on the diff"),
            InlineNote(path="README.md", line=1, body="not in the change")]


async def test_inline_notes_anchor_everywhere_and_retry_adds_nothing(backend: Backend) -> None:
    ref = backend.seed_change(5)
    unanchored = await backend.forge.post_inline(ref, [*NOTES, *OFF_DIFF], task="t-42")
    assert unanchored == OFF_DIFF
    bodies = backend.bodies(ref)
    for note in NOTES:
        assert sum(note.body in body for body in bodies) == 1, note
    assert await backend.forge.post_inline(ref, [*NOTES, *OFF_DIFF], task="t-42") == OFF_DIFF
    assert len(backend.bodies(ref)) == len(bodies)
    diff_comments = [c for c in await backend.forge.list_comments(ref) if c.path]
    assert {c.path for c in diff_comments} == {n.path for n in NOTES}


async def test_reply_and_resolve_a_diff_thread(backend: Backend) -> None:
    ref = backend.seed_change(5)
    await backend.forge.post_inline(ref, [NOTES[2]], task="t-42")
    (note,) = [c for c in await backend.forge.list_comments(ref) if c.path]
    await backend.forge.reply(note.ref, "Fixed in the next commit.")
    threads = {c.ref.thread for c in await backend.forge.list_comments(ref) if c.path or c.ref.review}
    assert len(threads) == 1 and any("Fixed in the next commit." in b for b in backend.bodies(ref))
    assert Capability.RESOLVE_THREADS in backend.forge.capabilities
    await backend.forge.resolve_thread(note.ref)
    assert backend.resolved_threads(ref) == 1


async def test_open_change_once_per_branch_closing_the_issue(backend: Backend) -> None:
    issue = backend.seed_issue(7)
    assert await backend.forge.find_change(backend.repo, "forgebot/7-file-api") is None
    request = ChangeRequest(source_branch="forgebot/7-file-api", title="File API", body="Adds the API.",
                            draft=True, closes=issue)
    opened = await backend.forge.open_change(backend.repo, request)
    again = await backend.forge.open_change(backend.repo, request)  # the retried task
    assert again == opened and backend.open_changes("forgebot/7-file-api") == 1
    assert await backend.forge.find_change(backend.repo, "forgebot/7-file-api") == opened
    if backend.state is not None:  # the fakes carry no diff for a change they opened themselves
        (seeded,) = [c for c in backend.state.changes.values() if c.source_branch == "forgebot/7-file-api"]
        assert seeded.draft and "Closes #7" in seeded.body and seeded.target_branch == "main"
    else:
        change = await backend.forge.get_change(opened)
        assert change.draft and "Closes #7" in change.body and change.target_branch == "main"


async def test_user_access_levels(backend: Backend) -> None:
    dev, maintainer, stranger = ForgeUser(id=11, username="dev"), ForgeUser(id=12, username="mai"), ForgeUser(
        id=13, username="who")
    backend.grant(dev, AccessLevel.DEVELOPER)
    backend.grant(maintainer, AccessLevel.MAINTAINER)
    assert await backend.forge.user_access(backend.repo, dev) == AccessLevel.DEVELOPER
    assert await backend.forge.user_access(backend.repo, maintainer) == AccessLevel.MAINTAINER
    assert await backend.forge.user_access(backend.repo, stranger) == AccessLevel.NONE


async def test_reacting_twice_is_not_an_error(backend: Backend) -> None:
    ref = backend.seed_issue(3)
    backend.seed_comment(ref, "/analyze", author="bob")
    (trigger,) = await backend.forge.list_comments(ref)
    for _ in range(2):
        await backend.forge.add_reaction(ref, Reaction.EYES)
        await backend.forge.add_reaction(trigger.ref, Reaction.EYES)
    if backend.fake is not None:
        assert len(backend.fake.reactions) == 2
    else:
        assert backend.state is not None
        issue = backend.state.issues[(backend.forge_name, backend.repo.project, 3)]
        assert len(issue.reactions) == 1
        located = backend.state.find_comment(backend.forge_name, backend.repo.project, trigger.ref.id)
        assert located is not None and len(located[1].reactions) == 1


async def test_issue_conversation_threads_do_not_resolve(backend: Backend) -> None:
    ref = backend.seed_issue(3)
    comment = await backend.forge.post_comment(ref, "status")
    with pytest.raises(ForgeUnsupported):
        await backend.forge.resolve_thread(comment)


async def test_long_comment_is_cut_to_the_forge_limit_keeping_the_marker(backend: Backend) -> None:
    ref = backend.seed_issue(3)
    limit = 1_000_000 if backend.repo.forge == "gitlab" else 65_536
    await backend.forge.post_comment(ref, "x" * (limit + 10), STATUS)
    (body,) = backend.bodies(ref)
    assert len(body) <= limit and body.endswith(render_marker(STATUS)) and "truncated" in body


async def test_git_credentials_name_the_forge_user_and_hide_the_token(backend: Backend) -> None:
    credentials = await backend.forge.git_credentials()
    assert credentials.username == ("oauth2" if backend.repo.forge == "gitlab" else "x-access-token")
    token = credentials.token.get_secret_value()
    assert token and token not in repr(credentials) and token not in str(credentials)
    if backend.state is not None:  # the adapters hand git the token the API accepted
        assert token in backend.state.tokens


async def test_resolve_repo_answers_the_forges_own_record(backend: Backend) -> None:
    """The one source of a repository's identity: by numeric id (GitLab project, GitHub repository)
    the adapter returns the forge's path, default branch and clone URL; an unknown id is not found."""
    repo_id = 1 if backend.forge_name == "gitlab" else 4711
    backend.seed_repo(repo_id, "https://forge.example/group/app.git")
    found = await backend.forge.resolve_repo(repo_id)
    assert (found.forge, found.project, found.path, found.id) == (backend.forge_name, backend.repo.project,
                                                                  backend.repo.path, repo_id)
    assert (found.default_branch, found.clone_url) == ("trunk", "https://forge.example/group/app.git")
    with pytest.raises(ForgeNotFound):
        await backend.forge.resolve_repo(999_999)


async def test_read_file_answers_a_files_bytes_at_a_branch(backend: Backend, tmp_path: Path) -> None:
    """The receiver reads `.forgebot.yml` this way: a file at the default branch, None when absent,
    an error when larger than asked for (never read whole)."""
    repo_id = 1 if backend.forge_name == "gitlab" else 4711
    backend.seed_repo(repo_id, "https://forge.example/group/app.git")
    backend.seed_file(repo_id, ".forgebot.yml", b"labels:\n  implement: ai:do\n", tmp_path)
    repo = await backend.forge.resolve_repo(repo_id)
    assert await backend.forge.read_file(repo, ".forgebot.yml", "trunk", 1024) == b"labels:\n  implement: ai:do\n"
    assert await backend.forge.read_file(repo, "absent.yml", "trunk", 1024) is None
    with pytest.raises(ForgeError):
        await backend.forge.read_file(repo, ".forgebot.yml", "trunk", 8)


async def test_whoami_names_the_tokens_user(backend: Backend) -> None:
    me = await backend.forge.whoami()
    assert me.login == "forgebot"


async def test_save_hook_creates_then_updates_one_hook(backend: Backend) -> None:
    repo_id = 1 if backend.forge_name == "gitlab" else 4711
    backend.seed_repo(repo_id, "https://forge.example/group/app.git")
    repo = await backend.forge.resolve_repo(repo_id)
    created = await backend.forge.save_hook(repo, "https://bot.example/webhooks/x/1", "s1")
    updated = await backend.forge.save_hook(repo, "https://bot.example/webhooks/x/1", "s2", created.id)
    assert updated.id == created.id
    assert [(h.id, h.url) for h in await backend.forge.list_hooks(repo)] == [(created.id, created.url)]
