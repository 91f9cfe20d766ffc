"""The coder's checklist as executable state: the current item, its baseline, decisions, the outcome.

`complete_item` and `finish` are decided here by code: an item closes only with an actual change
since it began (or, for a report item, a report and no outstanding edits), lint of the files it
modified passes, and the patch is not TODO-only. The same failure against an unchanged worktree
twice ends the session as looping. The progress summary that replaces a closed item's history is
assembled here without a model call.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from foundation.gitrunner import git
from foundation.signing import Committer
from graph.coder import gitstate
from graph.schemas import ChecklistItem, Plan
from graph.state import Decision
from graph.tools.paths import PathRejected, resolve_in_worktree

Lint = Callable[[Sequence[str]], list[str]]  # modified files -> problems (empty: clean)
SessionEnd = Literal["", "finished", "looping", "blocked", "infrastructure"]
_TODO = re.compile(r"\b(TODO|FIXME|XXX)\b")


class ItemRejected(ValueError):
    """complete_item or finish refused; the message says what to do. Edits stay on disk."""


@dataclass
class Checklist:
    """One coder session's plan and everything code decided about it."""

    root: Path
    plan: Plan
    base: str  # the commit the task started from
    lint: Lint
    author: Committer  # the operator's `workspace.author_*` and signing key, which push rules may require
    step_commits: bool = True
    # a commit's first line from what it does: the repository's `commit_message` template
    subject: Callable[[str], str] = field(default=lambda title: title)
    decisions: list[Decision] = field(default_factory=list)
    reports: dict[int, str] = field(default_factory=dict)
    commits: list[str] = field(default_factory=list)
    files_read: list[str] = field(default_factory=list)
    # Whether a path is protected; the default is the built-in list. The route passes the repository's.
    protected: Callable[[str], bool] = field(default_factory=lambda: _default_protection())
    end: SessionEnd = ""
    end_reason: str = ""
    baseline: str = ""
    _last_failure: tuple[int, str, str] | None = None

    def __post_init__(self) -> None:
        # The last commit, not the worktree: edits an earlier (looping) session left on disk belong
        # to the open item and count as its change.
        self.baseline = git(self.root, "rev-parse", "HEAD^{tree}").strip()

    # --- scope -------------------------------------------------------------------------------------

    def writable(self) -> list[str]:
        return list(self.plan.scope.writable)

    def widen(self, path: str) -> None:
        """request_file: the path becomes writable (and stops being context only)."""
        scope = self.plan.scope
        if path in scope.context_only:
            scope.context_only.remove(path)
        if path not in scope.writable:
            scope.writable.append(path)

    def current(self) -> ChecklistItem | None:
        return next(iter(self.plan.open_items), None)

    def targets(self) -> list[str]:
        """Files injected before every call: the current item's, then the rest of the write scope."""
        item = self.current()
        first = list(item.paths) if item else []
        return [*first, *(p for p in self.writable() if p not in first)]

    def item(self, item_id: int) -> ChecklistItem:
        for item in self.plan.items:
            if item.id == item_id:
                return item
        raise ItemRejected(f"there is no checklist item {item_id}")

    # --- complete_item -----------------------------------------------------------------------------

    def complete(self, item_id: int, note: str, report: str = "", already_done: str = "") -> str:
        item = self.item(item_id)
        if item.status != "open":
            raise ItemRejected(f"item {item_id} is already {item.status}")
        now = gitstate.snapshot(self.root)
        try:
            detail = self._check(item, now, report, already_done)
        except ItemRejected as exc:
            return self._failed(item_id, now, str(exc))
        self._close(item, note or detail, report)
        return f"Item {item_id} closed ({detail})." + self._next_hint()

    def _check(self, item: ChecklistItem, now: str, report: str, already_done: str) -> str:
        changed = gitstate.changed_files(self.root, self.baseline, now)
        if item.kind == "report":
            if not report.strip():
                raise ItemRejected(f"item {item.id} is a report item: pass its findings in `report`")
            if changed:
                raise ItemRejected(f"a report item closes with no outstanding edits; changed: {', '.join(changed)}")
            return "report"
        if already_done:
            return self._already_done(item, changed, already_done)
        if not changed:
            raise ItemRejected(f"nothing changed since item {item.id} began; apply its patch first")
        if _todo_only(gitstate.diff(self.root, self.baseline, now)):
            raise ItemRejected("the change only adds TODO/FIXME markers; implement the item")
        problems = self.lint(changed)
        if problems:
            raise ItemRejected("lint failed on the modified files:\n" + "\n".join(problems))
        return f"changed {', '.join(changed)}"

    def _already_done(self, item: ChecklistItem, changed: list[str], evidence: str) -> str:
        """Tell work this task committed earlier from code that predates it; never accept a bare claim."""
        if changed:
            raise ItemRejected("already_done with uncommitted edits: close the item for its change instead")
        earlier = {p: gitstate.commits_touching(self.root, self.base, p) for p in item.paths}
        done = [f"{p} ({shas[0][:10]})" for p, shas in earlier.items() if shas]
        if done:
            return "committed earlier in this task: " + ", ".join(done)
        if not all(gitstate.exists_at(self.root, self.base, p) for p in item.paths):
            raise ItemRejected("already_done, but the item's files do not exist at the task's base")
        check_evidence(self.root, evidence, what="already_done")
        self.decisions.append({"kind": "already_done", "item": item.id, "reason": evidence,
                               "detail": "code predates the task; the reviewer verifies the claim"})
        return f"predates the task: {evidence}"

    def _failed(self, item_id: int, now: str, message: str) -> str:
        """A failure returns to the session; the same one on an unchanged worktree means looping."""
        key = (item_id, message, now)
        if self._last_failure == key:
            self.end, self.end_reason = "looping", f"item {item_id}: {message}"
            return f"Session ends as looping: the same failure twice on an unchanged diff: {message}"
        self._last_failure = key
        raise ItemRejected(message + "\nYour edits are kept on disk; fix them in place.")

    def _close(self, item: ChecklistItem, note: str, report: str) -> None:
        item.status, item.note = "done", note
        if report:
            self.reports[item.id] = report
        if self.step_commits and item.kind == "change":
            sha = self._commit(f"{self.subject(item.title)}\n\nChecklist item {item.id}.")
            if sha:
                self.commits.append(sha)
        self.baseline = gitstate.snapshot(self.root)
        self._last_failure = None

    def commit_refusal(self, path: str) -> str:
        """Why `path` may not be committed by this task ("" when it may): protected or out of scope."""
        if self.protected(path):
            return "a protected path (CI configuration, hooks, bot config)"
        if path not in self.writable():
            return "outside the write scope of the plan"
        return ""

    def _commit(self, message: str) -> str | None:
        """Every commit the coder makes: staged paths outside the scope or protected are dropped first."""
        refused: list[tuple[str, str]] = []
        sha = gitstate.commit_all(self.root, message, self.author, guard=self.commit_refusal, refused=refused)
        for path, reason in refused:
            self.decisions.append({"kind": "commit_refused", "path": path,
                                   "reason": f"{path!r} not committed: {reason}; restored"})
        return sha

    def _next_hint(self) -> str:
        nxt = self.current()
        return f" Next: item {nxt.id}. {nxt.title}" if nxt else " No item is open: call `finish`."

    # --- finish ------------------------------------------------------------------------------------

    def finish(self) -> str:
        open_items = self.plan.open_items
        if open_items:
            listed = ", ".join(f"{i.id}. {i.title}" for i in open_items)
            raise ItemRejected(f"finish refused: items still open: {listed}")
        if not gitstate.is_clean(self.root):
            if self.step_commits:
                raise ItemRejected("finish refused: the worktree has uncommitted edits outside any item")
            self._commit(self.subject("Implement the checklist"))
        self.end, self.end_reason = "finished", "every item closed, worktree clean"
        return "Finished: every item is closed and the worktree is clean."

    # --- the session journal (graph.runtime.journal) ----------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """What code decided so far, saved with the coder's session after every call."""
        return {"plan": self.plan.model_dump(mode="json"), "decisions": self.decisions, "reports": self.reports,
                "commits": self.commits, "files_read": self.files_read, "end": self.end,
                "end_reason": self.end_reason, "baseline": self.baseline,
                "last_failure": list(self._last_failure) if self._last_failure else None}

    def restore(self, doc: dict[str, Any]) -> None:
        """A resumed session's checklist as it was saved (the plan is validated like any plan)."""
        if doc["end"] not in ("", "finished", "looping", "blocked", "infrastructure"):
            raise ValueError(f"not a session end: {str(doc['end'])[:40]!r}")
        self.plan = Plan.model_validate(doc["plan"])
        self.decisions = list(doc["decisions"])  # read fresh from the journal: nothing else holds them
        self.reports = {int(k): str(v) for k, v in doc["reports"].items()}
        self.commits = [str(c) for c in doc["commits"]]
        self.files_read = [str(f) for f in doc["files_read"]]
        self.end, self.end_reason, self.baseline = doc["end"], str(doc["end_reason"]), str(doc["baseline"])
        failure = doc["last_failure"]
        self._last_failure = (int(failure[0]), str(failure[1]), str(failure[2])) if failure else None

    # --- progress summary --------------------------------------------------------------------------

    def progress(self) -> str:
        """The memory unit: replaces the history of each closed item (assembled by code, no model)."""
        lines = ["Checklist:"]
        for item in self.plan.items:
            mark = {"open": "[ ]", "done": "[x]", "dropped": "[-]"}[item.status]
            paths = ", ".join(item.paths) or "no files"
            lines.append(f"{mark} {item.id}. {item.title} ({item.kind}; {paths}; criteria {item.criteria})")
            if item.note:
                lines.append(f"    note: {item.note}")
        if self.files_read:
            lines.append("Files read so far: " + ", ".join(dict.fromkeys(self.files_read)))
        if self.decisions:
            lines.append("Decisions: " + "; ".join(f"{d['kind']}: {d['reason']}" for d in self.decisions))
        nxt = self.current()
        lines.append(f"Next item: {nxt.id}. {nxt.title}" if nxt else "No item is open: call `finish`.")
        return "\n".join(lines)


def check_evidence(root: Path, evidence: str, what: str = "evidence") -> None:
    """`path:line` (or `path:start-end`) naming a real line of a real file in the worktree.

    The same check for a plan blocker and an `already_done` claim: a claim about the code must
    point at the code, and code, not the model, decides whether that place exists.
    """
    path, colon, line = evidence.strip().partition(":")
    if not colon or not path:
        raise ItemRejected(f"{what} needs evidence as path:line in the existing code, got {evidence[:80]!r}")
    try:
        target = resolve_in_worktree(root, path)
    except PathRejected as exc:
        raise ItemRejected(f"{what} evidence {evidence[:80]!r}: {exc}") from exc
    if not target.is_file():
        raise ItemRejected(f"{what} evidence {evidence[:80]!r}: {path} is not a file")
    lines = target.read_text(encoding="utf-8", errors="replace").count("\n") + 1
    number = line.split("-")[0].strip()
    if not number.isdigit() or not 1 <= int(number) <= lines:
        raise ItemRejected(f"{what} evidence {evidence[:80]!r} must be path:line with a line in 1..{lines}")


def _default_protection() -> Callable[[str], bool]:
    from graph.coder.patch import protection

    return protection((), ())


def _todo_only(patch: str) -> bool:
    """True when the added lines are only TODO/FIXME markers (and blank or comment punctuation)."""
    added = [ln[1:].strip() for ln in patch.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    meaningful = [ln for ln in added if ln and not _TODO.search(ln) and ln not in ("/*", "*/", "*", "//", "#")]
    return not meaningful and any(_TODO.search(ln) for ln in added)
