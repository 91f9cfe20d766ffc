"""review_intake: load the change, check its branch, prepare the checkout, the base and the criteria.

Review-only requires the code under review to exist in git: the change's source
branch must be in the repository, else the author gets a clear reply and the route ends. The
base is the merge base with the target branch, or — on a re-review — the head reviewed last, so
only what changed since is inspected. Criteria come from the change description and from the
issues it closes (their list items, or their title when they have none), extracted by code —
and only from text written by project members (`graph.discussion.is_member`, the decomposer's
rule): anyone may open a change on a public project, and its description must not set what the
review checks. A non-member's description is kept out of the criteria (the review then checks
the general criterion) and named in `withheld`; its title reaches the reviewer fenced as data.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

from langgraph.runtime import Runtime

import prompts
from foundation.forge import Change, ChangeRef, ForgeNotFound, GitCredentials, IssueRef, Marker, RepoRef
from foundation.gitrunner import GitError, git
from foundation.workspace import Workspaces, repo_key
from graph.checkout import profile_note, review_index
from graph.deps import Deps
from graph.disclosure import disclosable
from graph.discussion import is_member
from graph.findings import ReviewRecord
from graph.nodes.publisher import footer
from graph.reviewlint import linted
from graph.state import TaskState
from project.profiles.detect import detect_profile
from project.repoconfig import CONFIG_PATHS, RepoConfig, RepoConfigError, parse_repo_config
from project.reviewstore import ReviewStore, change_key

_CLOSES = re.compile(r"\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?|implement[sd]?)(?:\s*:)?\s+#(\d+)", re.IGNORECASE)
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?(\S.{2,})$")
_HEAD_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")  # SHA-1 or SHA-256
_CRITERIA_HEADING = re.compile(r"criteri|acceptance|requirement|definition of done", re.IGNORECASE)


def list_items(text: str) -> list[str]:
    """The criteria a description states: list items under a criteria heading, else its checkboxes.

    Only what the forge shows is read: a pull request template's HTML comments (`<!-- - [ ] I have
    read CONTRIBUTING -->`) and fenced code blocks hold list items nobody wrote as criteria, and each
    such item came back "not verified", so every review of such a change was "incomplete".
    """
    under, items, boxes = False, [], []
    for line in shown_lines(text):
        heading = heading_title(line)
        if heading is not None and not _ITEM.match(line):
            under = bool(_CRITERIA_HEADING.search(heading))
            continue
        item = _ITEM.match(line)
        if item is None:
            continue
        if under:
            items.append(item.group(1).strip())
        elif re.match(r"^\s*(?:[-*+]|\d+[.)])\s+\[[ xX]\]", line):
            boxes.append(item.group(1).strip())
    return items or boxes


def shown_lines(text: str) -> list[str]:
    """The lines of Markdown `text` outside HTML comments and fenced code blocks; linear in its length.

    A comment that is never closed hides the rest, as the forge renders it; so does an open fence.
    """
    parts, at = [], 0
    while (start := text.find("<!--", at)) >= 0:
        parts.append(text[at:start])
        end = text.find("-->", start + 4)
        at = len(text) if end < 0 else end + 3
    parts.append(text[at:])
    shown, fence = [], ""
    for line in "".join(parts).splitlines():
        marker = line.lstrip(" ")
        fenced = len(line) - len(marker) <= 3 and marker[:3] in ("```", "~~~")
        if fence:
            closing = marker.rstrip()
            if fenced and closing.strip(fence[0]) == "" and len(closing) >= len(fence):
                fence = ""  # a closing fence: the opening's character, at least as many, nothing else
        elif fenced:
            fence = marker[:len(marker) - len(marker.lstrip(marker[0]))]
        else:
            shown.append(line)
    return shown


def heading_title(line: str) -> str | None:
    """The title of a `# Title:` or `**Title**` line, else None; linear in the line's length.

    Same result as the former `^\\s*(?:#{1,6}\\s+|\\*\\*)(.+?)(?:\\*\\*)?\\s*:?\\s*$`, which was cubic on a
    line of spaces (3,000 froze the server for 20 s); tests/security/test_redos.py compares the two.
    """
    stripped = line.lstrip()
    hashes = len(stripped) - len(stripped.lstrip("#"))
    if 1 <= hashes <= 6:
        after = stripped[hashes:]
        body = after.lstrip()
        if not body:  # the `\s+` gives one space back to the title when it has two or more
            return after[-1] if len(after) >= 2 else None
        if len(body) == len(after):
            return None
    elif hashes == 0 and stripped.startswith("**"):
        body = stripped[2:]
        if not body:
            return None
    else:
        return None
    end = body.rstrip()
    end = end[:-1].rstrip() if end.endswith(":") else end
    end = end[:-2] if end.endswith("**") else end
    if end:
        return end
    # The whole body is trailing decoration: the lazy title takes the shortest start that leaves a valid tail.
    return "**" if body.startswith("**") else body[0]


def closed_issues(text: str) -> list[int]:
    return list(dict.fromkeys(int(n) for n in _CLOSES.findall(text)))


async def run(state: TaskState, runtime: Runtime[Deps]) -> dict[str, Any]:
    """Prepare the review, or reply why it cannot happen (missing branch) and end the route."""
    deps = runtime.context
    repo = RepoRef.model_validate(state["repo"])
    ref = ChangeRef(repo=repo, number=state["number"])
    change = await deps.forge.get_change(ref)
    spaces = Workspaces.for_settings(deps.settings)
    key = repo_key(state["forge"], repo.project)
    if not repo.clone_url:
        raise ValueError(f"repository {repo.path} has no clone URL (the forge gave none)")
    credentials = await deps.forge.git_credentials()
    mirror = await spaces.mirror(key, repo.clone_url, credentials)
    start = await _head(spaces, key, mirror, change, credentials)
    if start is None:
        body = prompts.render("review.missing_branch", change=prompts.terms(state["forge"])["change"],
                              branch=change.source_branch, head=change.head_sha[:12],
                              command=deps.settings.triggers.review_command, footer=footer(state))
        comment = await deps.forge.post_comment(ref, body, Marker(task=state["task_id"], purpose="missing-branch"))
        return {"outcome": "no_branch", "report_comment_id": comment.id, "workspace": ""}
    workspace = await spaces.worktree(key, state["task_id"], f"forgebot-review/{state['task_id']}", start)
    head = git(workspace, "rev-parse", "HEAD").strip()
    base = git(workspace, "merge-base", f"origin/{change.target_branch}", "HEAD").strip()
    store = ReviewStore.in_data_dir(deps.settings.data_dir)
    record = store.load(change_key(state["forge"], repo.project, ref.number), ReviewRecord)
    if record is not None and record.head == head:
        body = prompts.render("review.up_to_date", head=head[:12], footer=footer(state))
        comment = await deps.forge.post_comment(ref, body, Marker(task=state["task_id"], purpose="up-to-date"))
        return {"outcome": "up_to_date", "report_comment_id": comment.id, "workspace": ""}
    if record is not None and _is_ancestor(workspace, record.head, head):
        base = record.head  # a re-review: only what changed since the last one
    config = await _repo_config(spaces, key, repo.default_branch)
    if not config.profile:  # detected from the target branch's files, like the configuration is read from it
        config = config.with_detection(await asyncio.to_thread(detect_profile, workspace,
                                                               f"origin/{repo.default_branch}"))
    again = record is not None and base == record.head
    member = await is_member(deps.forge, ref, change.author, change.author_id)
    criteria, withheld = await _criteria(deps, ref, change, member)
    return {
        "workspace": str(workspace), "review_base": base, "title": change.title,
        "body": change.body if member else "", "withheld": withheld, "criteria": criteria,
        "review_limits": _limits(deps, config), "review_noise": _noise(deps, config),
        "linted": await _linted(deps, workspace, base, config),
        "profile": profile_note(config.profile_choice(), deps.settings.data_dir, state["task_id"]),
        # the code graph of the head under review (read-only for the reviewer; reused per commit)
        "index": await asyncio.to_thread(review_index, deps.settings.data_dir, key, workspace, deps.settings.embedder,
                                       deps.settings.memory.max_commits),
        "review_open": [_line(t.finding) for t in record.open] if record is not None and again else [],
    }


async def _head(spaces: Workspaces, key: str, mirror: Path, change: Change, auth: GitCredentials) -> str | None:
    """The commit to review: the head the forge reports; None when the mirror cannot get it.

    The change's own ref is fetched first: the mirror holds branches only, and a change from a fork
    has none in the repository. Its branch is often named like one of the repository's own (`main`,
    `patch-1`), so the source branch's name alone would review another commit, or nothing. Only where
    the forge reports no head yet (GitLab before it computed the change's first version) is the ref's
    tip, else the source branch's, taken as it is.
    """
    fetched = f"refs/forgebot/changes/{change.ref.number}"
    if change.head_ref:
        try:
            await spaces.fetch_ref(key, change.head_ref, fetched, auth)
        except GitError:
            pass  # no such ref there (a forge without change refs): the branches the mirror fetched
    if change.head_sha:
        if not _HEAD_SHA.fullmatch(change.head_sha):
            raise ValueError(f"the forge reported {change.head_sha!r} as the head commit")
        return _commit(mirror, change.head_sha)
    return _commit(mirror, fetched) or _commit(mirror, f"refs/remotes/origin/{change.source_branch}")


def _commit(mirror: Path, revision: str) -> str | None:
    try:
        return git(mirror, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{revision}^{{commit}}").strip()
    except GitError:
        return None


def _is_ancestor(root: Path, old: str, new: str) -> bool:
    try:
        git(root, "merge-base", "--is-ancestor", old, new)
    except GitError:
        return False  # rewritten history (force push): review the whole change again
    return True


async def _criteria(
    deps: Deps, ref: ChangeRef, change: Change, member: bool
) -> tuple[list[dict[str, Any]], list[str]]:
    """Criteria from members' text only (`member`: the description's author), and what was withheld."""
    if not member:
        reason = f"the description: @{change.author} has no write access, so it states no criteria"
        return [], [reason]
    texts, withheld = list_items(change.body), []
    for number in closed_issues(change.body):
        try:
            issue = await deps.forge.get_issue(IssueRef(repo=ref.repo, number=number), comments=False)
        except ForgeNotFound:
            continue
        if not disclosable(issue, ref.repo):  # its criteria would be quoted in this change's review
            withheld.append(f"issue #{number}: it is confidential, and this review is not")
            continue
        if not await is_member(deps.forge, ref, issue.author, issue.author_id):
            withheld.append(f"issue #{number}: @{issue.author} has no write access")
            continue
        texts.extend(list_items(issue.body) or [f"#{number}: {issue.title}"])
    return [{"id": i, "text": t} for i, t in enumerate(dict.fromkeys(texts), 1)], withheld


async def _repo_config(spaces: Workspaces, key: str, default_branch: str) -> RepoConfig:
    """`.forgebot.yml` on the default branch (never from the change itself); defaults when absent."""
    text = None
    for name in CONFIG_PATHS:
        try:
            text = await spaces.read_file(key, f"origin/{default_branch}", name)
        except GitError:
            break  # no such default branch in the mirror: defaults, like a repository without the file
        if text is not None:
            break
    if text is None:
        return RepoConfig()
    try:
        return parse_repo_config(text)
    except RepoConfigError:
        return RepoConfig()  # the analyze/implement routes report config errors; a review runs on defaults


async def _linted(deps: Deps, workspace: Path, base: str, config: RepoConfig) -> list[tuple[str, int]]:
    files = git(workspace, "diff", "--name-only", "--no-ext-diff", "--diff-filter=d", "-M", base, "HEAD", "--").split()
    if not files:
        return []
    return await asyncio.to_thread(linted, workspace, deps.settings, config, files)


def _limits(deps: Deps, config: RepoConfig) -> dict[str, Any]:
    review = deps.settings.review
    return {"max_file_lines": config.review.max_file_lines or review.max_file_lines,
            "budget_tokens": review.diff_budget_tokens}


def _noise(deps: Deps, config: RepoConfig) -> dict[str, Any]:
    review = deps.settings.review
    return {"severity_threshold": config.review.severity_threshold or review.severity_threshold,
            "max_findings": config.review.max_findings or review.max_findings}


def _line(finding: Any) -> str:
    where = f"{finding.path}:{finding.line}" if finding.line else (finding.path or "general")
    return f"[{finding.severity}] {where} {finding.message}"
