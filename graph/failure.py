"""The failure record: why a task ended without reaching its goal, where, and what each reader can do.

One record per task, built once where the failure is caught (the worker's job, the reaper,
`forgebot run`) and shown everywhere from the same fields: the issue author reads `reason` and
`author_action` (the status and failure comments: plain words, no exception names, no server
settings); the operator reads `kind`, `phase`, `role`, `detail` and `operator_action` (the console,
the log line, `forgebot tasks`). `kind` is the grouping key the console's health page counts by.

`transient` failures (a model or forge outage: refused connections, 5xx, 429, timeouts) were
retried before they became a failure; `bug` marks an error no rule here explains, the only kind
whose log line comes with a traceback.

The module itself imports nothing heavy: exception classes are looked up when a failure is
classified, so a command that only reads records (`forgebot tasks`) stays fast.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from foundation import cabundle

AGAIN = "Start the task again (re-add the label or repeat the command)"
LATER = f"{AGAIN} later; forgebot already retried it."
ASK = "ask the person who runs forgebot"
RETRY_OR_ASK = f"{AGAIN}; {ASK} if it keeps failing."
WAIT = "Wait for the person who runs forgebot to"
TRUST = f"{WAIT} name the certificate's CA, then start the task again."

# git's own words for a server or network that did not answer (the fetch is retried as an outage)
_GIT_TRANSIENT = re.compile(
    r"returned error: (5\d\d|429)|Could not resolve host|Failed to connect|Connection (timed out|refused|reset)"
    r"|Operation timed out|early EOF|RPC failed|unexpected disconnect|timed out after", re.I)


class ChangeRefused(Exception):
    """The work is pushed to `branch`, but the forge refused to open (or update) its change: a token that
    may push but not open merge requests (a fine-grained GitHub token without `pull_requests: write`).

    Said as such, with the branch: it was said as "forgebot's account is not a member of the project"
    (it had just pushed) with advice to run the whole task again."""

    def __init__(self, branch: str, change: str, why: str) -> None:
        super().__init__(f"{why} (the work is on branch {branch})")
        self.branch, self.change, self.why = branch, change, why


@dataclass(frozen=True)
class TaskFailure:
    """Why one task failed, in words for its author and for the operator."""

    kind: str  # the grouping key, a few plain words ("model unreachable", "budget: tokens", "internal error")
    reason: str  # for the issue author: what happened, without exception names or settings
    author_action: str  # what the issue author can do about it
    operator_action: str  # what the operator can do (may name settings, logs, commands)
    phase: str = ""  # where: a pre-graph step (authorize, mirror, worktree, index, memory) or a graph node
    role: str = ""  # the model role or node that was working ("" when none)
    detail: str = ""  # technical detail for the operator (redacted): the provider's or git's own message
    transient: bool = False  # an outage that was retried before it became a failure
    bug: bool = False  # nothing here explains it: the log line carries the traceback

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> TaskFailure | None:
        """The record stored with a task; None for none (or one written by an incompatible release)."""
        if not text:
            return None
        try:
            data = json.loads(text)
        except ValueError:
            return None
        if not isinstance(data, dict):
            return None
        known = {f.name for f in fields(cls)}
        try:
            return cls(**{k: v for k, v in data.items() if k in known})
        except TypeError:
            return None

    def cleaned(self, clean: Callable[[str], str]) -> TaskFailure:
        """The record with `clean` (a redactor) applied to every text."""
        return replace(self, kind=clean(self.kind), reason=clean(self.reason), author_action=clean(self.author_action),
                       operator_action=clean(self.operator_action), phase=clean(self.phase), role=clean(self.role),
                       detail=clean(self.detail))

    def where(self) -> str:
        """`phase` and `role` as one phrase for the operator ("index", "coder in coder")."""
        if self.role and self.phase and self.role != self.phase:
            return f"{self.role} in {self.phase}"
        return self.phase or self.role or "?"

    def for_author(self) -> str:
        """What the issue's author reads: the reason, then what they can do."""
        return f"{self.reason.rstrip('.')}.\n\n{self.author_action}"

    def comment(self, task_id: str) -> str:
        """The task's one failure comment on the forge."""
        return f"forgebot could not finish this task: {self.for_author()}\n\n<sub>forgebot · task {task_id}</sub>"

    def log_line(self, task_id: str) -> str:
        """The one line a failure writes to the log (values quoted as JSON strings)."""
        parts = {"task": task_id, "kind": self.kind, "phase": self.phase, "role": self.role,
                 "reason": self.reason, "detail": self.detail, "operator": self.operator_action}
        return "task failed " + " ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in parts.items() if v)


def _clean(text: str, secrets: Sequence[str]) -> str:
    from foundation.redact import redact

    return " ".join(redact(text, secrets).split())[:500]


def _detail(exc: BaseException, secrets: Sequence[str]) -> str:
    message = str(exc)
    return _clean(f"{type(exc).__name__}: {message}" if message else type(exc).__name__, secrets)


def is_transient(exc: BaseException) -> bool:
    """An outage worth retrying: a model or forge that did not answer, a 5xx, a 429, a timeout."""
    from foundation.forge import ForgeRateLimited, ForgeUnavailable
    from foundation.gitrunner import GitError
    from foundation.llm import ModelCallError
    from foundation.workspace import CredentialsRefused, PushRefused, WorkspaceFull

    if isinstance(exc, ForgeRateLimited | ForgeUnavailable):
        return True
    if isinstance(exc, ModelCallError):
        return exc.failure.kind in ("transient", "unreachable")
    if isinstance(exc, GitError) and not isinstance(exc, WorkspaceFull | CredentialsRefused | PushRefused):
        return bool(_GIT_TRANSIENT.search(str(exc)))
    return isinstance(exc, ConnectionError | TimeoutError)


def retry_after(exc: BaseException) -> float | None:
    """The wait the service itself asked for (Retry-After), if any."""
    from foundation.forge import ForgeRateLimited
    from foundation.llm import ModelCallError

    if isinstance(exc, ForgeRateLimited):
        return exc.retry_after
    if isinstance(exc, ModelCallError):
        return exc.failure.retry_after
    return None


def _model(exc: Any, role: str, secrets: Sequence[str], tries: int) -> TaskFailure:
    """A model call that failed for good, by what the provider answered."""
    kind, provider = exc.failure.kind, _clean(exc.failure.reason, secrets)
    step = f"the {exc.role} step" if exc.role not in ("", "model") else "a step"
    setting = exc.setting
    words = {
        "transient": ("model unavailable", f"the AI model service was unavailable while {step} ran", LATER,
                      f"the model endpoint failed {_tried(tries)} of this task; check that it is up (`forgebot check`)"
                      + (f"; its calls timed out: a slow model needs a larger {setting}" if exc.failure.setting
                         else "")),
        "unreachable": ("model unreachable", f"forgebot could not reach the AI model service while {step} ran",
                        LATER, f"the model endpoint did not answer over {tries} tries; check {setting} and that "
                        "the endpoint is up (`forgebot check`)"),
        "certificate": ("model certificate", "forgebot does not trust the TLS certificate of the AI model service",
                        TRUST,
                        f"the model endpoint's certificate is not signed by a CA this machine trusts: {cabundle.HINT}"),
        "auth": ("model credentials", "the AI model service refused forgebot's credentials",
                 f"{WAIT} fix its model access, then start the task again.",
                 f"the model endpoint refused the key: check {setting} (`forgebot check`)"),
        "quota": ("model quota", "the AI model service's account has no credit or quota left",
                  f"{WAIT} fix its model access, then start the task again.",
                  f"the provider says the account behind {setting} has used its quota or credit: check its plan and "
                  "billing (not retried: no wait refills it)"),
        "not_found": ("model not found", "the AI model forgebot is configured to use does not exist at its service",
                      f"{WAIT} fix its model settings, then start the task again.",
                      f"check {setting} against the models the endpoint serves"),
        "context": ("context window", f"{step} needed more text than the AI model can read at once",
                    f"A smaller issue or change may fit; otherwise {ASK}.",
                    f"the request exceeded the model's context window: check {setting} or use a larger model"),
        "window": ("model window", f"the AI model service reads less text at once than {step} sends it",
                   f"{WAIT} fix its model settings, then start the task again.",
                   f"the model server runs the model with a smaller window than forgebot's: see the detail; check "
                   f"{setting}"),
        "format": ("model answer format", f"the AI model could not give {step} its answer in the required form",
                   f"Please {ASK}: the model may not support structured answers.",
                   f"check {setting} (`forgebot check` shows what the endpoint accepts)"),
        "invalid": ("model answer invalid", f"the AI model's answer in {step} could not be used",
                    RETRY_OR_ASK,
                    f"the model's answer broke the required schema; check {setting} or use a more capable model"),
        "length": ("model answer cut off", f"the AI model's answer in {step} was cut off",
                   RETRY_OR_ASK,
                   f"the answer hit the output limit, also when asked for a shorter one; check {setting} or use "
                   "a more capable model"),
        "refusal": ("model refused", f"the AI model refused to work on {step}",
                    f"Rephrasing the issue may help; otherwise {ASK}.",
                    f"the provider refused the request; check {setting}"),
        "request": ("model request rejected", f"the AI model service rejected a request of {step}",
                    f"Please {ASK}.", f"the endpoint rejected the request: see the detail; check {setting}"),
    }
    label, reason, author, operator = words.get(kind, words["request"])
    needed = getattr(exc, "needed", None)  # forgebot measured it before sending (graph.runtime.window)
    if kind == "context" and isinstance(needed, int):
        reason = (f"{step} needs an AI model that can read at least {needed} tokens at once, and the one "
                  f"configured reads {exc.window}")
        operator = (f"set FORGEBOT_LLM__CONTEXT_WINDOW_TOKENS to {needed} or more, for a model whose window is "
                    "that large")
    return TaskFailure(kind=label, reason=reason, author_action=author, operator_action=operator, role=exc.role or role,
                       detail=provider, transient=kind in ("transient", "unreachable"))


def _tried(tries: int) -> str:
    return f"{tries} {'try' if tries == 1 else 'tries'}"


def _git(exc: BaseException, secrets: Sequence[str], tries: int) -> TaskFailure:
    from foundation.gitrunner import GitTimeout
    from foundation.workspace import CredentialsRefused, PushRefused, WorkspaceFull

    if isinstance(exc, PushRefused):  # the work is done; starting again would be refused the same way
        said = _clean(exc.reason, secrets).replace("`", "'")
        return TaskFailure("push refused", f"the repository refused forgebot's branch `{exc.branch}`, saying "
                           f"`{said}`", f"Please {ASK}: until the repository's rules or forgebot's rights change, "
                           "starting the task again is refused the same way. A rule on commit messages is met by "
                           "`commit_message` in `.forgebot.yml`.",
                           "let the bot's account push its branches: protected branches, push rules (the branch "
                           "name starts with FORGEBOT_WORKSPACE__BRANCH_PREFIX, `forgebot/` by default; the commits' "
                           "author is FORGEBOT_WORKSPACE__AUTHOR_EMAIL, their message the repository's "
                           "`commit_message`, their signature by FORGEBOT_WORKSPACE__SIGNING_KEY), a GitHub App's "
                           "Workflows permission or a token's `workflow` scope "
                           "(the forge's reason is quoted)",
                           detail=_detail(exc, secrets))
    if isinstance(exc, WorkspaceFull):
        return TaskFailure("disk full", "the server running forgebot has no room left for this repository",
                           f"{WAIT} free some space, then start the task again.",
                           "raise FORGEBOT_WORKSPACE__MAX_BYTES or free disk under the data directory",
                           detail=_detail(exc, secrets))
    if isinstance(exc, CredentialsRefused):
        return TaskFailure("clone host refused", "the repository is not hosted where forgebot is allowed to fetch it",
                           f"Please {ASK}.", "the clone URL is not on the configured forge: check the forge URL or "
                           "FORGEBOT_WORKSPACE__GIT_HOSTS", detail=_detail(exc, secrets))
    if cabundle.untrusted(str(exc)):  # every try is refused alike: configuration, not an outage
        return TaskFailure("git certificate", "forgebot does not trust the TLS certificate of the server the "
                           "repository is fetched from", TRUST,
                           f"git refused the server's certificate: {cabundle.hint(cabundle.GIT)}",
                           detail=_detail(exc, secrets))
    tried = _tried(tries)
    if isinstance(exc, GitTimeout):  # git answered but the command ran too long: a huge first mirror, say
        return TaskFailure("git timeout", "a git command on the repository took longer than forgebot allows",
                           LATER, f"{_clean(str(exc), secrets)} ({tried} of this task): a large repository's first "
                           "mirror can need more; raise FORGEBOT_WORKSPACE__GIT_TIMEOUT",
                           detail=_detail(exc, secrets), transient=True)
    if is_transient(exc):
        return TaskFailure("git unavailable", "forgebot could not fetch the repository: the server did not answer",
                           LATER, f"git failed {tried} of this task; check that the forge serves git",
                           detail=_detail(exc, secrets), transient=True)
    return TaskFailure("git", "forgebot could not prepare a working copy of the repository",
                       RETRY_OR_ASK,
                       "see the detail (git's own message) and the worker log", detail=_detail(exc, secrets))


def _forge(exc: BaseException, secrets: Sequence[str], tries: int) -> TaskFailure | None:
    from foundation.forge import (
        ForgeAuthError,
        ForgeError,
        ForgeNotFound,
        ForgeRateLimited,
        ForgeUnavailable,
        ForgeUntrusted,
    )

    if isinstance(exc, ForgeUntrusted):
        return TaskFailure("forge certificate", "forgebot does not trust the forge's TLS certificate", TRUST,
                           "the forge API's certificate is not signed by a CA this machine trusts: "
                           f"{cabundle.hint(cabundle.REQUESTS)}",
                           detail=_detail(exc, secrets))
    if isinstance(exc, ForgeRateLimited | ForgeUnavailable):
        what = "limited how fast forgebot may call it" if isinstance(exc, ForgeRateLimited) else "did not answer"
        return TaskFailure("forge unavailable", f"the forge {what}, and retrying did not help", LATER,
                           f"the forge API failed {_tried(tries)} of this task; check it is up and the token's "
                           "rate limits (`forgebot check`)", detail=_detail(exc, secrets), transient=True)
    if isinstance(exc, ForgeAuthError):
        return TaskFailure("forge credentials", "the forge refused forgebot's access to this project",
                           "Make sure forgebot's account is a member of the project, then start the task again.",
                           f"grant the fine-grained token or the GitHub App the permission {exc.permission} (an "
                           "App's installations must accept a new permission)" if exc.permission else
                           "the forge refused the token (401/403): check its scopes and the bot's membership "
                           "(`forgebot check`)", detail=_detail(exc, secrets))
    if isinstance(exc, ForgeNotFound):
        return TaskFailure("gone", "the issue, change or project could not be found any more",
                           "Nothing to do if it was deleted or moved.", "the forge answered 404 for the task's item",
                           detail=_detail(exc, secrets))
    if isinstance(exc, ForgeError):
        return TaskFailure("forge error", "the forge rejected one of forgebot's requests",
                           RETRY_OR_ASK,
                           "see the detail (the forge's answer) and the worker log", detail=_detail(exc, secrets))
    return None


def _limit(exc: BaseException) -> TaskFailure | None:
    from langgraph.errors import GraphRecursionError

    from graph.runtime.tasklimits import BudgetExceeded

    if isinstance(exc, BudgetExceeded):
        return TaskFailure(f"budget: {exc.budget}", str(exc),
                           "A smaller issue may fit the budget; a maintainer can raise the repository's budgets "
                           "in `.forgebot.yml`.",
                           "raise FORGEBOT_LLM__TASK_TOKEN_BUDGET (tokens) or the repository's `.forgebot.yml` budgets")
    if isinstance(exc, GraphRecursionError):
        found = re.search(r"[Rr]ecursion limit of (\d+)", str(exc))
        steps = f" after {found.group(1)} steps" if found else ""
        reason = f"it was stopped{steps}: its work kept going round in circles"
        return TaskFailure("recursion limit", reason,
                           f"{AGAIN} with a more specific issue; {ASK} if it repeats.",
                           "the graph hit FORGEBOT_LLM__RECURSION_LIMIT; the trace shows the cycle")
    return None


def failure_of(exc: BaseException, *, phase: str = "", role: str = "", secrets: Sequence[str] = (),
               tries: int = 1) -> TaskFailure:
    """The record for an exception that ended a task (`tries`: how many times the job ran it)."""
    from foundation.gitrunner import GitError, GitTampered
    from foundation.llm import ModelCallError, ModelConfigError
    from graph.disclosure import Undisclosable
    from graph.routing import ModeUnavailable
    from project.repoconfig import RepoConfigError

    found: TaskFailure | None
    if isinstance(exc, ModelCallError):
        found = _model(exc, role, secrets, tries)
    elif isinstance(exc, ModelConfigError):
        found = TaskFailure("model not configured", "forgebot has no usable AI model configured yet",
                            f"{WAIT} configure one, then start the task again.",
                            _clean(str(exc), secrets) + " (`forgebot check`)")
    elif isinstance(exc, GitTampered):
        found = TaskFailure("tampered checkout", "its working copy was changed by something other than forgebot",
                            f"Please {ASK}.", "git metadata in the task's worktree is not the bot's: inspect it "
                            "before retrying (see the detail)", detail=_detail(exc, secrets))
    elif isinstance(exc, GitError):
        found = _git(exc, secrets, tries)
    elif isinstance(exc, ChangeRefused):
        found = TaskFailure("change refused", f"the forge refused to open the {exc.change} for this work, which is on "
                            f"branch `{exc.branch}`", f"Open a {exc.change} from `{exc.branch}` yourself, or {ASK} "
                            f"to let forgebot open them.", "the token may push but not open changes: GitHub "
                            "`pull_requests: write` (fine-grained token or App) or the `repo` scope; GitLab: "
                            "Developer", detail=_detail(exc, secrets))
    elif isinstance(exc, Undisclosable):
        seen = f"the project is {exc.visibility}" if exc.visibility in ("public", "internal") else \
            "the forge did not say who may see the project"
        found = TaskFailure("confidential issue", f"this issue is confidential and {seen}: a merge request, its "
                            "branch and its code would be seen by people who may not read this issue, so forgebot "
                            "opened none", "Work on it in a private fork (the issue's merge request button offers "
                            "one), or make the project private; analysis and plans still work here.",
                            "forgebot publishes no work of a GitLab confidential issue unless the project is "
                            "private (GET /projects/:id `visibility`)")
    elif isinstance(exc, ModeUnavailable):
        found = TaskFailure("mode unavailable", str(exc), "Use one of the available modes.",
                            "this release does not have the mode")
    elif isinstance(exc, RepoConfigError):  # its message is written for the repository's people
        found = TaskFailure("repository config", _clean(str(exc), secrets),
                            "A maintainer can correct `.forgebot.yml` on the default branch, then start the task "
                            "again.", "the repository's `.forgebot.yml` asks for what this server does not give: "
                            "see the reason")
    else:
        found = _forge(exc, secrets, tries) or _limit(exc)
    if found is None and isinstance(exc, ConnectionError | TimeoutError):
        found = TaskFailure("service unavailable", "a service forgebot needs did not answer", LATER,
                            "see the detail and the worker log", detail=_detail(exc, secrets), transient=True)
    if found is None:
        found = TaskFailure("internal error", "forgebot ran into an internal error",
                            f"{AGAIN}; the person who runs forgebot can see what went wrong.",
                            "a bug: the worker log has the traceback of this task; please report it",
                            detail=_detail(exc, secrets), bug=True)
    return _placed(found, phase, role)


def _placed(found: TaskFailure, phase: str, role: str) -> TaskFailure:
    return replace(found, phase=found.phase or phase, role=found.role or role)


def failure_of_state(state: Mapping[str, Any], secrets: Sequence[str] = ()) -> TaskFailure:
    """The record of a route that ended itself as failed (a plan rejected, the coder stuck, a gate red)."""
    reason = _clean(str(state.get("failure") or "the task stopped without a result"), secrets)
    return TaskFailure("did not finish", reason,
                       "Clarifying the issue (criteria, files to touch) may help; then start the task again.",
                       "the route ended as failed: the task page's timeline and trace show where",
                       phase=str(state.get("status_phase") or ""))


def worker_lost(how: str, tries: int) -> TaskFailure:
    """The record of a task whose job ended without finishing it (`how`: arq's status of the job)."""
    return TaskFailure("worker lost", "the worker running this task stopped before it finished",
                       RETRY_OR_ASK,
                       f"the job ended ({how}) without finishing the task, after at most {tries} tries: look for "
                       "killed workers (out of memory, FORGEBOT_JOB_TIMEOUT) in the worker log", phase="worker")


def run_lost(pid: int, host: str) -> TaskFailure:
    """The record of a `forgebot run` whose process ended without writing how the run ended."""
    return TaskFailure("run lost", "the forgebot run process stopped before the run finished",
                       "Run it again with the same forgebot run command.",
                       f"process {pid} on {host} is gone without having recorded the run's end (killed: kill -9, "
                       "out of memory, a restart); its worktree is removed with the task's retention",
                       phase="run")
