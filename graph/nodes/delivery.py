"""After the review: decide, then deliver the change or report the failure (keeping the branch).

`decide` applies `final_verdict` (a reviewer approval never replaces a failed mandatory gate) and
either approves, starts a fix round (a new checklist item carrying the failed gates and findings),
or stops: a broken test environment, no progress (`no_progress`: findings judged by identity,
not wording), or the rounds used up. `deliver` pushes `<prefix><issue>-<slug>` (`forgebot/` unless the
operator sets another), finds or opens the change (idempotent) with its description (what changed,
the checks, the review) and links it from the issue.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langgraph.runtime import Runtime

import prompts
from foundation.forge import ChangeRequest, ForgeAuthError, IssueRef, Marker, RepoRef
from foundation.gitrunner import GitError, git
from foundation.redact import fence, redact, secrets_of
from foundation.workspace import Workspaces, repo_key
from graph.deps import Deps
from graph.disclosure import ensure_disclosable
from graph.failure import ChangeRefused
from graph.findings import same_finding, stalled
from graph.nodes import bounds
from graph.nodes.gates import environment_broken, repo_config
from graph.nodes.publisher import footer
from graph.protections import note
from graph.runtime.tasklimits import limits_of
from graph.schemas import ChecklistItem, Finding, GateResult, Plan, Review, final_verdict
from graph.state import ChangeRecord, FindingDump, TaskState


def branch_name(number: int, title: str, prefix: str) -> str:
    """`<prefix><issue>-<slug>`: the prefix is the operator's (`workspace.branch_prefix`), the rest the issue's."""
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:40].strip("-") or "change"
    return f"{prefix}{number}-{slug}"


def is_bot_branch(branch: str, prefix: str) -> bool:
    """Whether `branch` has the form of the bot's own (`<prefix><issue>-…`): the only branches it replaces."""
    return re.match(re.escape(prefix) + r"[0-9]+-", branch) is not None


def change_reference(repo: RepoRef, number: int) -> str:
    """How the forge links a change in a comment: `!N` is a merge request on GitLab, `#N` a pull request."""
    return f"!{number}" if repo.forge == "gitlab" else f"#{number}"


def problems(state: TaskState) -> list[str]:
    """What stands between the result and an approval: failed mandatory gates and blocking findings."""
    gates = [f"gate {g['name']} failed" for g in state.get("gates", []) if g["mandatory"] and g["status"] == "failed"]
    review = state.get("review", {})
    findings = [f"{f['severity']}: {f['message']}" for f in review.get("findings", [])
                if f["severity"] in ("blocker", "major")]
    return gates + findings


def decide(state: TaskState) -> dict[str, Any]:
    review = Review.model_validate(state["review"])
    gates = [GateResult.model_validate(g) for g in state.get("gates", [])]
    verdict = final_verdict(review, gates)
    if verdict == "approve":
        return {"outcome": "approved"}
    broken = environment_broken(state)
    if broken:
        return {"failure": broken}
    if verdict == "incomplete":
        return {"failure": "the review could not verify criteria " + ", ".join(map(str, review.unverified_criteria))}
    now = problems(state)
    stuck = no_progress(state)
    if stuck:
        return {"failure": stuck}
    if not bounds.left(state, "review"):
        rounds = bounds.limit(state, "review")
        return {"failure": f"the review-rounds budget ({rounds}) is used up; still: " + "; ".join(now)}
    return {**_fix_round(state, now), "review_findings": [_blocking(state)]}  # appended by TaskState


def _blocking(state: TaskState) -> list[FindingDump]:
    return [f for f in state.get("review", {}).get("findings", []) if f["severity"] in ("blocker", "major")]


def no_progress(state: TaskState) -> str:
    """Why the fix rounds stop for lack of progress ("" when there was progress).

    Findings are compared by identity (`findings.same_finding`: file, overlapping lines, criterion
    or concern), never by wording, which a reviewer rephrases each round. Two dead ends: nothing
    closed since the last round (every earlier failed gate and finding is back), or one finding
    raised in each of the last rounds (`findings.stalled`), however many others closed meanwhile.
    """
    if not state.get("review_problems"):
        return ""  # the first review: nothing to compare with
    history = [[Finding.model_validate(f) for f in past] for past in state.get("review_findings", [])]
    current = [Finding.model_validate(f) for f in _blocking(state)]
    failed = {p for p in problems(state) if p.startswith("gate ")}
    failed_before = {p for p in state.get("review_problems", []) if p.startswith("gate ")}
    previous = history[-1] if history else []
    back = stalled([previous, current], patience=1)
    if failed_before <= failed and all(any(same_finding(f, g) for f in back) for g in previous):
        return "no progress in the last fix round: " + "; ".join(problems(state))
    dead = stalled([*history, current], patience=STALL_ROUNDS)
    if dead:
        listed = "; ".join(f"{f.severity}: {f.message} ({f.path or '-'}:{f.line or '-'})" for f in dead)
        return f"no progress on findings raised in each of the last {STALL_ROUNDS + 1} reviews: {listed}"
    return ""


# a finding back after this many fix rounds aimed at it is a dead end for that finding
STALL_ROUNDS = 2


def _fix_round(state: TaskState, now: list[str]) -> dict[str, Any]:
    plan = Plan.model_validate(state["plan"])
    title = "Fix: " + "; ".join(now)[:200]
    plan.items.append(ChecklistItem(id=len(plan.items) + 1, title=title, paths=list(plan.scope.writable),
                                    criteria=sorted({c for i in plan.items for c in i.criteria})))
    findings = [f"- {f['severity']} {f.get('path') or ''}:{f.get('line') or ''} {f['message']}"
                for f in state.get("review", {}).get("findings", [])]
    context = "\n".join([state.get("fix_context", ""), "Review findings:", *findings])
    return {**bounds.spend(state, "review"), "review_problems": now, "plan": plan.model_dump(),
            "fix_context": context, "outcome": "fix_round"}


async def decide_node(state: TaskState, runtime: Runtime[Deps]) -> dict[str, Any]:
    update = decide(state)
    budget = limits_of(state, runtime.context.settings).max_tokens
    if update.get("outcome") == "fix_round" and bounds.tokens_left(state, budget) <= 0:
        return {"failure": f"the task's token budget ({budget}) is used up; still: " + "; ".join(problems(state))}
    return update


def _cell(text: str, secrets: Sequence[str]) -> str:
    """A gate's detail for a table cell: redacted, one line, no pipe or backtick to break out."""
    return re.sub(r"\s+", " ", redact(text, secrets)).replace("|", "/").replace("`", "'")[:200]


def description(state: TaskState, secrets: Sequence[str] = ()) -> str:
    """Criteria, the checklist and its decisions, each gate's status, the reviewer's verdict.

    A gate's detail can be the last line of the check's own output, which the repository's code
    wrote: it is redacted (token shapes and `secrets`) and, for a failed gate, fenced as untrusted.
    The model saw that output too, so what it wrote (item notes, decisions) may quote it: the whole
    text is redacted once more before it leaves.
    """
    review = state.get("review", {})
    gates = [GateResult.model_validate(g) for g in state.get("gates", [])]
    lines = [f"Implements #{state['number']}: {state.get('title', '')}", "", "### Acceptance criteria"]
    lines += [f"{c['id']}. {c['text']}" for c in state.get("criteria", [])]
    lines += ["", "### Checklist"]
    items = Plan.model_validate(state["plan"]).items if state.get("plan") else []
    for item in items:
        mark = {"done": "x", "open": " ", "dropped": "-"}[item.status]
        lines.append(f"- [{mark}] {item.id}. {item.title}" + (f" — {item.note}" if item.note else ""))
    decisions = state.get("plan_decisions", [])
    if decisions:
        lines += ["", "### Decisions"]
        lines += [f"- {d['kind']}: {d.get('reason', '')}" + (f" ({d['evidence']})" if d.get("evidence") else "")
                  for d in decisions]
    lines += ["", "### Gates"]
    chosen = state.get("profile", {}).get("line")
    lines += [f"Profile: {chosen}", ""] if chosen else []
    lines += ["| gate | status | detail |", "|---|---|---|"]
    failed = [g for g in gates if g.status == "failed" and g.detail.strip()]
    lines += [f"| {g.name} | `{g.status}` | {'output below' if g in failed else _cell(g.detail, secrets)} |"
              for g in gates]
    for gate in failed:
        lines += ["", f"{gate.name}:", fence(redact(gate.detail.strip()[-2000:], secrets))]
    sandbox = note(gates)
    if sandbox:
        lines += ["", "### Check sandbox", *sandbox]
    verdict = final_verdict(Review.model_validate(review), gates) if review else "not reviewed"
    lines += ["", f"### Review: `{verdict}`", review.get("summary", "")]
    sync = state.get("index_sync", {})
    if sync.get("status") == "degraded":
        lines.append(f"\nSearch was degraded during this task: {sync.get('detail', '')}")
    return redact("\n".join(lines), secrets) + "\n\n<sub>" + footer(state) + "</sub>"


async def _push(state: TaskState, runtime: Runtime[Deps], *, unfinished: bool = False) -> tuple[str, str]:
    """Push the task's work; (the branch it is on, a sentence for the issue when that is not the usual one).

    The branch is the bot's own: a FULL_RESET or a later task on the issue replaces it, but never over
    someone else's commits. A person who pushed a fix to the bot's branch (on its merge request) keeps
    it: the work goes to a branch of this task's own, and the sentence says why. So does `unfinished`
    work (a failed task's) when a change is open from the branch: that change's description, gates and
    verdict describe the work on it, and a reviewer could merge failing code under them.
    """
    settings, forge = runtime.context.settings, runtime.context.forge
    repo = RepoRef.model_validate(state["repo"])
    prefix = settings.workspace.branch_prefix
    branch = state.get("branch") or branch_name(state["number"], state.get("title", ""), prefix)
    if repo.forge == "local" or not repo.clone_url:  # `forgebot run` delivers its branch itself (bot.worker.local)
        return branch, ""
    if not is_bot_branch(branch, prefix):
        raise ValueError(f"refusing to push {branch!r}: the bot only replaces its own {prefix}<issue>- branches")
    await ensure_disclosable(forge, IssueRef(repo=repo, number=state["number"]))  # made confidential meanwhile?
    spaces, auth = Workspaces.for_settings(settings), await forge.git_credentials()
    key, base = repo_key(repo.forge, repo.project), f"refs/remotes/origin/{repo.default_branch}"
    own = settings.workspace.own_emails(repo.forge)
    await spaces.mirror(key, repo.clone_url, auth)  # what the forge holds now, pushed since the task began too
    tip, others = await spaces.others_commits(key, branch, base, own)
    said = ""
    if others:
        said = (f"`{branch}` holds {others} commit(s) by others since `{repo.default_branch}`; they were left as "
                "they are, and this task's work is on a branch of its own.")
    elif unfinished and (open_change := await forge.find_change(repo, branch)) is not None:
        said = (f"`{branch}` is the branch of {change_reference(repo, open_change.number)}, which describes other "
                "work, so it was left as it is.")
    if said:
        branch = f"{branch}-{state['task_id'][:8]}"
        tip, others = await spaces.others_commits(key, branch, base, own)
        if others:
            raise GitError(f"refusing to replace {branch}: it holds {others} commit(s) by others")
    await spaces.push(Path(state["workspace"]), repo.clone_url, branch, auth=auth, lease=tip)
    return branch, said


async def deliver(state: TaskState, runtime: Runtime[Deps]) -> dict[str, Any]:
    forge = runtime.context.forge
    repo = RepoRef.model_validate(state["repo"])
    branch, said = await _push(state, runtime)
    issue = IssueRef(repo=repo, number=state["number"])
    ref = await forge.find_change(repo, branch)
    text = description(state, secrets_of(runtime.context.settings))
    try:
        if ref is None:
            # a squash merge commits the change's title: it follows the repository's commit message rule too
            title = repo_config(state).commit_subject(state.get("title") or branch, state["number"])
            ref = await forge.open_change(
                repo, ChangeRequest(source_branch=branch, title=title, body=text, closes=issue)
            )
        else:  # an earlier task's change: its branch now holds this task's work, so its description must say so
            await forge.edit_change(ref, text)
    except ForgeAuthError as exc:  # it may push, not open changes: the work is there all the same
        raise ChangeRefused(branch, prompts.terms(repo.forge)["change"], str(exc)) from exc
    opened = f"Opened {change_reference(repo, ref.number)} from `{branch}` for this issue."
    link = " ".join(filter(None, (opened, said))) + f"\n\n<sub>{footer(state)}</sub>"
    await forge.post_comment(issue, link, marker=Marker(task=state["task_id"], purpose="change-link"))
    return {"change": ChangeRecord(number=ref.number, branch=branch), "outcome": "delivered"}


async def report_failure(state: TaskState, runtime: Runtime[Deps]) -> dict[str, Any]:
    """One comment with the reason and the task id; the branch is pushed when the task committed work."""
    repo = RepoRef.model_validate(state["repo"])
    feedback = "; ".join(state.get("plan_feedback", []))
    reason = state.get("failure") or (f"the plan was rejected: {feedback}" if feedback else "") or (
        f"the coder stopped: {state.get('coder', {}).get('reason', '')}" if state.get("coder") else
        "the route stopped without a result")
    kept = ""
    root = state.get("workspace", "")
    if root and state.get("base") and git(Path(root), "rev-list", f"{state['base']}..HEAD").strip():
        branch, said = await _push(state, runtime, unfinished=True)
        kept = f"\n\nThe work so far is kept on branch `{branch}`." + (f" {said}" if said else "")
    reason = redact(reason, secrets_of(runtime.context.settings))  # may quote a gate's detail
    body = f"forgebot could not finish this task: {reason}.{kept}\n\n<sub>{footer(state)}</sub>"
    await runtime.context.forge.post_comment(IssueRef(repo=repo, number=state["number"]), body,
                                             marker=Marker(task=state["task_id"], purpose="failure"))
    # the failure record (the console's, a local run's closing line) says the same reason as the comment
    return {"outcome": "failed", "failure": reason}
