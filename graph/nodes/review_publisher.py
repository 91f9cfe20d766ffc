"""review_publisher: inline findings on the diff, the summary comment, and re-review bookkeeping.

Each finding becomes one inline comment anchored on the diff (the forge validates the anchor
against the changed lines); a finding that cannot be anchored — or whose anchor the forge refuses
— is listed in the summary with `path:line`, and one failure never stops the others. The summary
carries a stable hidden marker, so a re-review edits it in place. On a re-review, findings are
reconciled with the open ones (`graph.findings.reconcile`): repeats are not posted again, fixed
findings get their thread resolved, and findings the author answered are not raised again while
the code there is unchanged.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from langgraph.runtime import Runtime

import prompts
from foundation.forge import Capability, ChangeRef, CommentRef, Forge, ForgeError, InlineNote, Marker, RepoRef
from foundation.forge._text import render_marker
from foundation.forge.diff import parse
from foundation.gitrunner import GitError, git
from graph.deps import Deps
from graph.findings import Noise, Reconciled, ReviewRecord, Tracked, filter_noise, finding_key, reconcile
from graph.nodes.publisher import footer
from graph.nodes.reviewer import GENERAL_CRITERION
from graph.schemas import SEVERITY_RANK, Finding, Review
from graph.state import TaskState
from project.reviewstore import ReviewStore, change_key

log = logging.getLogger(__name__)
SUMMARY = Marker(task="review", purpose="summary")  # one summary per change, edited by every review
_VERDICTS = {"approve": "approved", "request_changes": "changes requested", "incomplete": "incomplete, not approved"}


async def run(state: TaskState, runtime: Runtime[Deps]) -> dict[str, Any]:
    """Publish the review on the change and remember what is open for the next `/review`."""
    deps = runtime.context
    ref = ChangeRef(repo=RepoRef.model_validate(state["repo"]), number=state["number"])
    store = ReviewStore.in_data_dir(deps.settings.data_dir)
    key = change_key(state["forge"], ref.repo.project, ref.number)
    record = store.load(key, ReviewRecord)
    review = Review.model_validate(state["review"])
    scope = state["review_scope"]
    noise_cfg = state.get("review_noise", {})
    linted = [(str(path), int(line)) for path, line in state.get("linted", [])]
    kept, noise = filter_noise(review.findings, noise_cfg.get("severity_threshold", "info"),
                               int(noise_cfg.get("max_findings", 50)), linted)
    incremental = record is not None and record.head == scope["base"]
    previous = await _with_answers(deps.forge, ref, record.open) if record is not None else []
    # after a force push the last head may be gone: then positions are taken as they were
    delta, renames, deleted = _delta(state["workspace"], record.head, scope["head"]) if record else ({}, {}, [])
    rec = reconcile(previous, kept, delta, renames, deleted)
    posted, unanchored = await _post_new(deps.forge, ref, state["task_id"], rec.new)
    again = await _post_again(deps.forge, ref, state["task_id"], rec, scope["head"])
    await _close_fixed(deps.forge, ref, state["task_id"], rec.fixed, scope["head"])
    body = _summary(state, review, kept, unanchored, rec, noise, incremental)
    comment = await deps.forge.post_comment(ref, body, SUMMARY)
    tracked = [*rec.carried, *again, *posted]
    store.save(key, scope["head"], ReviewRecord(head=scope["head"], tracked=tracked, summary_comment_id=comment.id))
    return {"outcome": state.get("verdict", review.verdict), "report_comment_id": comment.id}


async def _with_answers(forge: Forge, ref: ChangeRef, open_: list[Tracked]) -> list[Tracked]:
    """Mark findings whose thread has a reply from someone other than the bot (by author, not marker)."""
    if not any(t.thread for t in open_):
        return open_
    comments = await forge.list_comments(ref)
    answered = {c.ref.thread for c in comments if c.ref.thread and not forge.bot.wrote(c)}
    return [t.model_copy(update={"status": "answered"}) if t.thread in answered else t for t in open_]


def _delta(workspace: str, base: str, head: str) -> tuple[dict[str, Any], dict[str, str], list[str]]:
    """Hunks per old path of the diff between two reviewed heads, renames (old → new) and deletions."""
    hunks: dict[str, Any] = {}
    renames: dict[str, str] = {}
    deleted: list[str] = []
    try:
        diff = git(Path(workspace), "diff", "--no-color", "--no-ext-diff", "--no-textconv", "--src-prefix=a/",
                   "--dst-prefix=b/", "-M", base, head, "--")
    except GitError:
        return hunks, renames, deleted
    for part in parse(diff):
        hunks[part.old_path] = part.hunks
        if part.old_path != part.path:
            renames[part.old_path] = part.path
        if part.status == "deleted":
            deleted.append(part.path)
    return hunks, renames, deleted


def _note(finding: Finding, body: str, multiline: bool) -> InlineNote:
    end = finding.end_line or finding.line
    assert finding.path is not None and finding.line is not None and end is not None
    start = finding.line if multiline and end > finding.line else None
    return InlineNote(path=finding.path, line=end, body=body, side=finding.side, start_line=start)


async def _post_new(forge: Forge, ref: ChangeRef, task: str,
                    findings: list[Finding]) -> tuple[list[Tracked], list[Finding]]:
    """One inline comment per finding; the ones that cannot anchor come back for the summary."""
    multiline = Capability.MULTILINE_INLINE in forge.capabilities
    tracked: list[Tracked] = []
    unanchored: list[Finding] = []
    for finding in findings:
        key = finding_key(finding)
        if finding.path is None or finding.line is None:
            unanchored.append(finding)
            tracked.append(Tracked(key=key, finding=finding))
            continue
        body = _body(finding) + "\n\n" + render_marker(Marker(task=task, purpose=f"finding.{key}"))
        try:
            left = await forge.post_inline(ref, [_note(finding, body, multiline)], task)
        except ForgeError as exc:  # one refused anchor never aborts the rest
            log.warning("inline note refused task=%s path=%s line=%s: %s", task, finding.path, finding.line, exc)
            left = [InlineNote(path=finding.path, line=finding.line, body=body)]
        if left:
            unanchored.append(finding)
        tracked.append(Tracked(key=key, finding=finding))
    return await _threads(forge, ref, task, tracked), unanchored


async def _threads(forge: Forge, ref: ChangeRef, task: str, tracked: list[Tracked]) -> list[Tracked]:
    """Attach each posted finding to its comment thread, found by the finding's hidden marker."""
    comments = await forge.list_comments(ref)
    out = []
    for t in tracked:
        mark = render_marker(Marker(task=task, purpose=f"finding.{t.key}"))
        hit = next((c for c in comments if mark in c.body), None)
        out.append(t if hit is None else t.model_copy(
            update={"comment_id": hit.ref.id, "thread": hit.ref.thread, "review": hit.ref.review}))
    return out


def _ref(ref: ChangeRef, t: Tracked) -> CommentRef:
    assert t.comment_id is not None
    return CommentRef(target=ref, id=t.comment_id, thread=t.thread, review=t.review)


async def _post_again(forge: Forge, ref: ChangeRef, task: str, rec: Reconciled, head: str) -> list[Tracked]:
    """Still there after the code changed: said in its own thread, not as a new comment."""
    out: list[Tracked] = []
    for old, finding in rec.again:
        if old.comment_id is None:
            posted, _ = await _post_new(forge, ref, task, [finding])
            out.extend(posted)
            continue
        text = f"Still applies at {head[:12]}: " + _body(finding)
        try:
            await forge.reply(_ref(ref, old), text, Marker(task=task, purpose=f"again.{old.key}"))
        except ForgeError as exc:
            log.warning("reply not posted task=%s finding=%s: %s", task, old.key, exc)
        out.append(old)
    return out


async def _close_fixed(forge: Forge, ref: ChangeRef, task: str, fixed: list[Tracked], head: str) -> None:
    can_resolve = Capability.RESOLVE_THREADS in forge.capabilities
    for t in fixed:
        if t.comment_id is None:
            continue
        try:
            await forge.reply(_ref(ref, t), f"Fixed at {head[:12]}.", Marker(task=task, purpose=f"fixed.{t.key}"))
            if can_resolve:
                await forge.resolve_thread(_ref(ref, t))
        except ForgeError as exc:  # one thread failing to resolve does not stop the others
            log.warning("thread not resolved task=%s finding=%s: %s", task, t.key, exc)


def _subject(finding: Finding) -> str:
    parts = [f"criterion {', '.join(map(str, finding.criteria))}" if finding.criteria else "", finding.concern]
    return " · ".join(p for p in parts if p)


def _body(finding: Finding) -> str:
    return prompts.render("review.finding", severity=finding.severity.capitalize(), subject=_subject(finding),
                          message=finding.message, evidence=finding.evidence, suggestion=finding.suggestion)


def _where(finding: Finding) -> str:
    if finding.path is None:
        return "(general)"
    if finding.line is None:
        return f"`{finding.path}`"
    end = f"-{finding.end_line}" if finding.end_line and finding.end_line != finding.line else ""
    return f"`{finding.path}:{finding.line}{end}`"


def _summary(state: TaskState, review: Review, kept: list[Finding], unanchored: list[Finding], rec: Reconciled,
             noise: Noise, incremental: bool) -> str:
    scope = state["review_scope"]
    off = {id(f) for f in unanchored}
    by_severity = []
    for severity in sorted(SEVERITY_RANK, key=lambda s: -SEVERITY_RANK[s]):
        lines = [f"{_where(f)} {f.message}" + (f" ({_subject(f)})" if _subject(f) else "")
                 + (" — not anchored on the diff" if id(f) in off else "")
                 for f in rec.new if f.severity == severity]
        if lines:
            by_severity.append((severity.capitalize(), lines))
    verified = set(review.verified_criteria)
    criteria = [f"{'verified' if c['id'] in verified else 'not verified'}: {c['id']}. {c['text']}"
                for c in state.get("criteria", [])] or [
        # the one the review checks when none is stated: an incomplete review's report must show it unverified
        f"{'verified' if GENERAL_CRITERION['id'] in verified else 'not verified'}: {GENERAL_CRITERION['text']} "
        f"(no criteria {'usable' if state.get('withheld') else 'stated'}; reviewed for defects, security and "
        "architecture)"]
    return prompts.render(
        "review.summary", verdict=_VERDICTS.get(state.get("verdict", review.verdict), review.verdict),
        summary=review.summary,
        scope=f"`{scope['base'][:12]}..{scope['head'][:12]}` ("
              + ("changes since the last review" if incremental else "the whole change")
              + f"), {len(scope['files'])} files",
        findings=by_severity, dropped=len(kept) < len(review.findings),
        carried=[f"{_where(t.finding)} [{t.finding.severity}] {t.finding.message}"
                 + (" (answered by the author)" if t.status == "answered" else "") for t in rec.carried]
        + [f"{_where(f)} [{f.severity}] {f.message} (raised again)" for _, f in rec.again],
        fixed=[f"{_where(t.finding)} [{t.finding.severity}] {t.finding.message}" for t in rec.fixed],
        criteria=criteria, withheld=state.get("withheld", []), not_reviewed=_not_reviewed(state, noise),
        footer=footer(state),
    )


def _not_reviewed(state: TaskState, noise: Noise) -> list[str]:
    lines = [f"`{path}`: {reason}" for path, reason in state["review_scope"]["skipped"]]
    threshold = state.get("review_noise", {}).get("severity_threshold", "info")
    if noise.below_threshold:
        lines.append(f"{noise.below_threshold} findings below the severity threshold ({threshold}) not shown")
    if noise.linter:
        lines.append(f"{noise.linter} findings dropped: the profile's linter reports them already")
    if noise.over_cap:
        lines.append(f"{noise.over_cap} findings over the cap of {state.get('review_noise', {}).get('max_findings')}"
                     " not shown")
    return lines
