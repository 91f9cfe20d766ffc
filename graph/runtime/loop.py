"""invoke_llm_with_tools: the tool loop every tool-using role runs.

Before each model call: the budgets are checked (an exhausted budget appends its orchestration
fragment and ends the session — never a silent cut), old call groups are pruned, the system message
is rebuilt from the role's prompt and a fresh disk snapshot of its target files, tool results whose
file changed on disk since are replaced by a stale notice, and the one current "files in context"
reminder replaces the previous one (the coder, whose system message carries the files, gets none).
Each tool call passes the role check, the injection check and the loop guard before it runs.

The loop speaks the chat protocol as real servers enforce it: every tool call id gets exactly one
tool response (also a call that is not run); a call whose arguments are not valid JSON
(`invalid_tool_calls`) is answered with a tool error the model can act on and counts toward the
call budget and the loop guard, and a reply whose only calls are malformed never ends the session
as finished. A reply cut at the output limit, or a request over the context window, is retried once
with the history pruned to its last call group; a second time the session fails saying so. Rate
limits, 5xx and timeouts are retried inside `foundation.llm.invoke`; a refusal fails the role naming it.

With a journal (`graph.runtime.journal`) the session's state and the run's history are saved after
every model reply and every tool call, so a worker killed mid-session continues at its next call.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, InvalidToolCall, SystemMessage, ToolMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool

import prompts
from foundation.llm import Failure, ModelCallError, Profile, invoke, profile
from foundation.settings import LLMSettings
from graph.runtime import journal as journaling
from graph.runtime.accounting import Ledger, usage_of
from graph.runtime.budget import Exhausted
from graph.runtime.guard import Action, Cause, ToolLoopGuard, Verdict
from graph.runtime.injection import Injection, InjectionLimits, file_sha, inject
from graph.runtime.journal import Entry, Kept, SessionJournal
from graph.runtime.scratchpad import END, Memory, prune
from graph.runtime.tool_calls import ToolOutcome, read_of, run_tool
from graph.runtime.trace import Trace, content_hash
from graph.runtime.window import Window, fit_turn, tool_tokens
from graph.tools import WRITE_TOOLS, check_role_tools

Outcome = Literal["finished", "synthesize", "looping", "report", "budget_exhausted", "tokens_exhausted"]
REMINDER = "forgebot:reminder"
STALE = "forgebot:stale"
_BY_ACTION: dict[Action, Outcome] = {Action.SYNTHESIZE: "synthesize", Action.STOP_LOOPING: "looping",
                                      Action.REPORT: "report"}


@dataclass
class Session:
    """One role's tool-loop session: what it may do and what it has seen."""

    role: str
    root: Path
    system: Callable[[], str]  # re-rendered before every call (the coder's checklist changes)
    targets: Callable[[], Sequence[str]]  # the files to inject, asked again before every call
    max_calls: int
    ledger: Ledger
    trace: Trace | None = None
    memory: Memory | None = None  # investigation roles; the coder's memory unit is the checklist item
    limits: InjectionLimits = field(default_factory=InjectionLimits)
    finish_tools: frozenset[str] = frozenset({"finish_exploration"})
    calls: int = 0
    epoch: int = 0  # successful write-tool calls so far; part of the disk state the guard sees
    guard: ToolLoopGuard = field(init=False)
    read_shas: dict[str, tuple[str, str]] = field(default_factory=dict)  # tool_call_id -> (path, sha)
    watched: set[str] = field(default_factory=set)
    tokens: int = 0  # this session's model tokens
    models: list[str] = field(default_factory=list)  # model name per call
    journal: SessionJournal | None = None  # None: the session is not saved between calls
    kept: Kept | None = None  # the role's own state its tools change, saved with the session
    window: Window = field(default_factory=lambda: Window.of(LLMSettings()))  # every request is fitted to it
    estimate: int = 0  # the last request's tokens by the window's estimate (traced beside the reported)

    def __post_init__(self) -> None:
        self.guard = ToolLoopGuard(self.role)

    def snapshot(self) -> dict[str, Any]:
        """Everything of the session a resumed run needs, as JSON."""
        return {
            "calls": self.calls, "epoch": self.epoch, "tokens": self.tokens, "models": list(self.models),
            "read_shas": {k: list(v) for k, v in self.read_shas.items()}, "watched": sorted(self.watched),
            "guard": journaling.dump_guard(self.guard), "ledger": journaling.dump_ledger(self.ledger),
            "memory": journaling.dump_memory(self.memory) if self.memory is not None else None,
            "kept": self.kept.snapshot() if self.kept is not None else None,
        }

    def restore(self, doc: dict[str, Any]) -> None:
        """The state `snapshot` saved; the objects stay the same (the role's tools hold them)."""
        self.calls, self.epoch, self.tokens = int(doc["calls"]), int(doc["epoch"]), int(doc["tokens"])
        self.models = [str(m) for m in doc["models"]]
        self.read_shas = {str(k): (str(p), str(sha)) for k, (p, sha) in doc["read_shas"].items()}
        self.watched = {str(p) for p in doc["watched"]}
        journaling.load_guard(self.guard, doc["guard"])
        journaling.load_ledger(self.ledger, doc["ledger"])
        if self.memory is not None and doc["memory"] is not None:
            journaling.load_memory(self.memory, doc["memory"])
        if self.kept is not None and doc["kept"] is not None:
            self.kept.restore(doc["kept"])

    @property
    def reminder(self) -> bool:
        return self.role != "coder"

    def event(self, kind: str, **fields: Any) -> None:
        if self.trace is not None:
            self.trace.event(kind, role=self.role, **fields)

    def disk_state(self) -> str:
        shas = [f"{p}={file_sha(self.root, p)}" for p in sorted(self.watched)]
        return hashlib.sha1("|".join([str(self.epoch), *shas]).encode()).hexdigest()[:12]


@dataclass
class LoopResult:
    outcome: Outcome
    messages: list[BaseMessage]
    final: AIMessage | None
    calls: int
    reason: str
    verdict: Verdict | None = None
    exhausted: Exhausted | None = None
    notice: str = ""  # the orchestration fragment that ended the session, for the synthesis call


async def invoke_llm_with_tools(
    model: BaseChatModel, tools: Sequence[BaseTool], messages: Sequence[BaseMessage], session: Session
) -> LoopResult:
    """Run the model with tools until it answers, finishes, exhausts a budget or is stopped.

    With a journal, a run it recorded as ended returns its result again (no model call) and the run
    that was open continues at its next unanswered tool call or its next model call.
    """
    check_role_tools(session.role, [t.name for t in tools])
    entry = await session.journal.next_run() if session.journal is not None else None
    if entry is not None:
        session.restore(entry.state)
        if entry.kind == "ended":
            return _result_of(entry.body, [])  # its history is not kept: what follows a run needs its end
    result = await _run(model, tools, messages, session, entry)
    if session.journal is not None:
        await session.journal.save_ended(session.snapshot(), _result_doc(result))
    return result


async def _run(model: BaseChatModel, tools: Sequence[BaseTool], messages: Sequence[BaseMessage], session: Session,
               entry: Entry | None) -> LoopResult:
    by_name = {t.name: t for t in tools}
    bound = model.bind_tools(list(tools))
    prof = dataclasses.replace(profile(model), role=session.role)
    history = [m for m in messages if not isinstance(m, SystemMessage)]
    shrunk = False  # the one prune-and-retry a cut answer or an overfull context gets
    if entry is not None:  # continue the journal's open run: first the calls its last reply still has open
        history, shrunk = journaling.load_messages(entry.body["history"]), bool(entry.body["shrunk"])
        stop = _result_of(entry.body["stop"], history) if entry.body["stop"] else None
        injection = inject(session.root, list(session.targets()), session.limits)
        ended = await _answer(session, by_name, history, injection, shrunk, stop)
        if ended is not None:
            return ended
    schemas = tool_tokens(tools)
    while True:
        stop = _exhausted(session, history)
        if stop is not None:
            return stop
        history, injection, system = _prepare(session, history, schemas)
        try:
            reply = await _ask(bound, [system, *history], prof)
        except ModelCallError as exc:
            if exc.failure.kind != "context":
                raise
            history, shrunk = _shrink(session, history, shrunk, exc.failure)
            continue
        _account(session, model, [system, *history], reply, injection)
        if _cut(reply) and not reply.tool_calls:
            failure = Failure("length", "the model's answer was cut at its output token limit")
            history, shrunk = _shrink(session, history, shrunk, failure)
            # the same request at temperature 0 is cut the same way again (a small model rambles to its
            # cap): the retry asks for a shorter answer
            history.append(HumanMessage(prompts.render("runtime.answer_cut")))
            continue
        history.append(reply)
        await _save(session, history, shrunk, None)
        ended = await _answer(session, by_name, history, injection, shrunk)
        if ended is not None:
            return ended


async def _answer(session: Session, tools: dict[str, BaseTool], history: list[BaseMessage], inj: Injection,
                  shrunk: bool, stop: LoopResult | None = None) -> LoopResult | None:
    """Act on the last reply: no tool asked for ends the session, else its calls not yet answered run."""
    answered = 0
    while isinstance(history[-1 - answered], ToolMessage):
        answered += 1
    reply = history[-1 - answered]
    if not isinstance(reply, AIMessage):
        raise ValueError("a session's history continues from a model reply")
    if not reply.tool_calls and not reply.invalid_tool_calls:
        return _end(session, "finished", history, reply, "the model answered without tools")
    return await _run_calls(session, tools, reply, history, inj, shrunk, stop, answered)


async def _save(session: Session, history: list[BaseMessage], shrunk: bool, stop: LoopResult | None) -> None:
    """After a reply or a tool call: the journal gets the run's history and the session's state."""
    if session.journal is not None:
        await session.journal.save_open(session.snapshot(), history, shrunk=shrunk,
                                        stop=_result_doc(stop) if stop is not None else None)


def _result_doc(result: LoopResult) -> dict[str, Any]:
    """A run's end without its history (which the journal's open run holds while it runs)."""
    verdict, spent = result.verdict, result.exhausted
    return {
        "outcome": result.outcome, "calls": result.calls, "reason": result.reason, "notice": result.notice,
        "final": journaling.dump_messages([result.final] if result.final is not None else []),
        "verdict": [verdict.cause, verdict.action, verdict.detail] if verdict is not None else None,
        "exhausted": [spent.kind, spent.limit, spent.used] if spent is not None else None,
    }


def _result_of(doc: dict[str, Any], messages: list[BaseMessage]) -> LoopResult:
    """A result the journal recorded; its outcome, verdict and budget are checked, not trusted."""
    outcome = doc["outcome"]
    if outcome not in get_args(Outcome):
        raise ValueError(f"not a session outcome: {str(outcome)[:40]!r}")
    final = journaling.load_messages(doc["final"])
    result = LoopResult(outcome=outcome, messages=messages, calls=int(doc["calls"]), reason=str(doc["reason"]),
                        final=final[0] if final and isinstance(final[0], AIMessage) else None,
                        notice=str(doc["notice"]))
    if doc["verdict"] is not None:
        cause, action, detail = doc["verdict"]
        result.verdict = Verdict(Cause(cause), Action(action), str(detail))
    if doc["exhausted"] is not None:
        kind, limit, used = doc["exhausted"]
        result.exhausted = Exhausted(kind=str(kind), limit=int(limit), used=int(used))
    return result


async def _ask(bound: Runnable[Any, Any], sent: list[BaseMessage], prof: Profile) -> AIMessage:
    reply = await invoke(bound, sent, prof)
    if not isinstance(reply, AIMessage):
        raise TypeError(f"model answered with {type(reply).__name__}, not an AI message")
    refused = reply.additional_kwargs.get("refusal") or (
        str(reply.content)[:200] or "refusal" if reply.response_metadata.get("stop_reason") == "refusal" else "")
    if refused:
        raise ModelCallError(prof.role, Failure("refusal", f"the model refused: {refused}"))
    return reply


def _finish_reason(reply: AIMessage) -> str:
    meta = reply.response_metadata
    return str(meta.get("finish_reason") or meta.get("stop_reason") or meta.get("done_reason") or "")


def _cut(reply: AIMessage) -> bool:
    """The reply stopped at the output token limit (OpenAI `length`, Anthropic `max_tokens`, Ollama `length`)."""
    meta = reply.response_metadata
    return "length" in (meta.get("finish_reason"), meta.get("done_reason")) or meta.get("stop_reason") == "max_tokens"


def _shrink(session: Session, history: list[BaseMessage], shrunk: bool,
            failure: Failure) -> tuple[list[BaseMessage], bool]:
    """Prune to the last call group for one retry; a second time fails saying so (as does an overfull
    context with nothing to prune: the same request would overflow again)."""
    pruned, removed = prune(history, keep_groups=1)
    if shrunk or (removed == 0 and failure.kind == "context"):
        again = "even when asked for a shorter answer" if failure.kind == "length" \
            else "even after pruning the conversation"
        why = again if shrunk else "and there was no tool history to prune"
        raise ModelCallError(session.role, dataclasses.replace(failure, reason=f"{failure.reason} {why}"))
    session.event("memory", event="pruned_for_retry", removed_calls=removed, cause=failure.kind)
    return pruned, True


def _exhausted(session: Session, history: list[BaseMessage]) -> LoopResult | None:
    spent = session.ledger.exhausted()
    if spent is None and session.calls < session.max_calls:
        return None
    spent = spent or Exhausted(kind="calls", limit=session.max_calls, used=session.calls)
    name = "reviewer.inspection_budget_exhausted" if session.role == "reviewer" else (
        "coder.budget_exhausted" if session.role == "coder" else "runtime.research_budget_exhausted")
    notice = prompts.render(name, budget=spent.kind, limit=spent.limit, used=spent.used)
    history.append(HumanMessage(notice))
    session.event("budget", budget=spent.kind, limit=spent.limit, used=spent.used, fragment=name)
    outcome: Outcome = "tokens_exhausted" if spent.kind == "tokens" else "budget_exhausted"
    result = _end(session, outcome, history, None, f"{spent.kind} budget {spent.used}/{spent.limit}")
    result.exhausted, result.notice = spent, notice
    return result


def _prepare(session: Session, history: list[BaseMessage],
             schemas: int) -> tuple[list[BaseMessage], Injection, SystemMessage]:
    """Prune, mark stale reads, inject from disk, fit the model's window, replace the reminder: the
    turn's fresh context (`schemas`: the tool schemas' tokens, which every request carries)."""
    if session.memory is not None:
        history, event = session.memory.before_call(history)
        if event is not None:
            session.event("memory", **event)
    targets = list(session.targets())
    session.watched.update(targets)
    history = [_freshen(session, m) for m in history if not m.additional_kwargs.get(REMINDER)]
    base = session.system()
    turn = fit_turn(session.role, session.window, base, history, schemas,
                    lambda limits: inject(session.root, targets, limits or session.limits), session.reminder)
    if turn.pruned or turn.cut:
        session.event("memory", event="fitted_to_window", removed_calls=turn.pruned, cut_results=turn.cut,
                      tokens=turn.tokens, window=session.window.tokens)
    history, injection = turn.history, turn.injection
    if session.reminder and injection.files:
        history.append(HumanMessage(injection.reminder(), additional_kwargs={REMINDER: True}))
    system = SystemMessage(base + ("\n\n" + injection.render() if injection.files else ""))
    session.estimate = turn.tokens
    return history, injection, system


def _freshen(session: Session, msg: BaseMessage) -> BaseMessage:
    """A read whose file changed on disk since is replaced by a notice: no stale text survives a patch."""
    if not isinstance(msg, ToolMessage) or msg.tool_call_id not in session.read_shas:
        return msg
    path, sha = session.read_shas[msg.tool_call_id]
    if file_sha(session.root, path) == sha:
        return msg
    del session.read_shas[msg.tool_call_id]
    notice = prompts.render("runtime.stale_read", path=path)
    return ToolMessage(notice, tool_call_id=msg.tool_call_id, name=msg.name, additional_kwargs={STALE: True})


def _account(session: Session, model: BaseChatModel, sent: list[BaseMessage], reply: AIMessage, inj: Injection) -> None:
    name = str(getattr(model, "model_name", None) or getattr(model, "model", None) or type(model).__name__)
    tokens_in, tokens_out = usage_of(reply)
    session.ledger.record(session.role, name, tokens_in, tokens_out)
    session.tokens += tokens_in + tokens_out
    session.models.append(name)
    texts = [str(m.content) for m in sent]
    session.event(
        "model", model=name, call=session.ledger.roles[session.role].calls, messages=len(sent),
        bytes=sum(len(t.encode("utf-8")) for t in texts), context_hash=content_hash(texts),
        injected=inj.metrics(), input_tokens=tokens_in, output_tokens=tokens_out,
        estimated_tokens=session.estimate, window=session.window.tokens, output_cap=session.window.output,
        finish=_finish_reason(reply), tool_calls=[c["name"] for c in reply.tool_calls],
    )


async def _run_calls(
    session: Session, tools: dict[str, BaseTool], reply: AIMessage, history: list[BaseMessage], inj: Injection,
    shrunk: bool, stop: LoopResult | None = None, answered: int = 0,
) -> LoopResult | None:
    """Answer every tool call of `reply` (each call id gets a response, even when not run), after the
    first `answered` (a resumed run's calls that completed before the worker died)."""
    bad_calls = len(reply.invalid_tool_calls)
    for bad in reply.invalid_tool_calls[answered:]:
        stop = _malformed(session, bad, history) or stop
        await _save(session, history, shrunk, stop)
    for call in reply.tool_calls[max(0, answered - bad_calls):]:
        call_id = call["id"] or ""
        if stop is not None or session.calls >= session.max_calls:
            why = "session ended" if stop is not None else "call budget exhausted"
            history.append(ToolMessage(f"Not run: {why}.", tool_call_id=call_id, name=call["name"]))
            continue
        outcome = await _one_call(session, tools, call["name"], dict(call["args"]), inj)
        history.append(ToolMessage(outcome.text, tool_call_id=call_id, name=call["name"]))
        if outcome.read is not None and outcome.status == "ok":
            session.read_shas[call_id] = (outcome.read.path, outcome.read.sha)
        if outcome.verdict is not None and outcome.verdict.action != Action.REFUSE:
            stop = _end(session, _BY_ACTION[outcome.verdict.action], history, None, outcome.verdict.detail)
            stop.verdict = outcome.verdict
        elif outcome.status == "ok" and call["name"] in session.finish_tools:
            stop = _end(session, "finished", history, reply, f"{call['name']} accepted")
        await _save(session, history, shrunk, stop)
    return stop


def _malformed(session: Session, bad: InvalidToolCall, history: list[BaseMessage]) -> LoopResult | None:
    """A call whose arguments did not parse: a tool error to act on, a call spent, a guard record."""
    name = bad.get("name") or "unknown"
    session.calls += 1
    error = "arguments are not valid JSON"
    detail = " ".join(str(bad.get("error") or "").split())[:200]
    text = prompts.render("runtime.malformed_tool_call", tool=name, error=detail or error)
    history.append(ToolMessage(text, tool_call_id=bad.get("id") or "", name=name, status="error"))
    verdict = session.guard.record(name, {"malformed": True}, session.disk_state(), error=error)
    session.event("tool", name=name, args={"raw": str(bad.get("args"))[:200]}, status="malformed",
                  bytes=len(text.encode()), preview=text[:120])
    if verdict is None:
        return None
    session.event("guard", cause=verdict.cause, action=verdict.action, detail=verdict.detail)
    stop = _end(session, _BY_ACTION[verdict.action], history, None, verdict.detail)
    stop.verdict = verdict
    return stop


async def _one_call(session: Session, tools: dict[str, BaseTool], name: str, args: dict[str, Any],
                    inj: Injection) -> ToolOutcome:
    session.calls += 1
    read = read_of(session.root, name, args)
    refusal = inj.refusal(read.path) if read is not None else None
    if refusal is not None:
        session.event("tool", name=name, args=args, status="refused", bytes=0, preview=refusal)
        strike = session.guard.strike(Cause.REDUNDANT_READ, f"{name} of injected {read.path if read else ''}")
        if strike.action != Action.REFUSE:
            session.event("guard", cause=strike.cause, action=strike.action, detail=strike.detail)
        return ToolOutcome(refusal, "refused", read, strike)
    disk = session.disk_state()
    verdict = session.guard.check(name, args, disk, read)
    if verdict is not None:
        session.event("guard", cause=verdict.cause, action=verdict.action, detail=verdict.detail)
        text = prompts.render("runtime.tool_repeated", tool=name, cause=str(verdict.cause), detail=verdict.detail)
        return ToolOutcome(text, "refused", read, verdict)
    outcome = await run_tool(session.root, tools, name, args, read)
    if outcome.status == "ok" and name in WRITE_TOOLS:
        session.epoch += 1
        if isinstance(args.get("path"), str):
            session.watched.add(args["path"])
    if read is not None:
        session.watched.add(read.path)
        if session.memory is not None and outcome.status == "ok":
            session.memory.reads.add(read.path, read.start, read.end or END)
    error = outcome.text if outcome.status != "ok" else None
    verdict = session.guard.record(name, args, disk, read=read, error=error, infrastructure=outcome.status == "infra")
    session.event("tool", name=name, args=args, status=outcome.status, bytes=len(outcome.text.encode()),
                  preview=outcome.preview)
    if verdict is not None:
        session.event("guard", cause=verdict.cause, action=verdict.action, detail=verdict.detail)
        return ToolOutcome(outcome.text, outcome.status, read, verdict)
    return outcome


def _end(session: Session, outcome: Outcome, history: list[BaseMessage], final: AIMessage | None,
         reason: str) -> LoopResult:
    session.event("session", outcome=outcome, calls=session.calls, reason=reason)
    return LoopResult(outcome=outcome, messages=history, final=final, calls=session.calls, reason=reason)


def state_update(session: Session, result: LoopResult) -> dict[str, Any]:
    """The TaskState update a node returns after a session: what ran, its memory, tokens and cost."""
    update: dict[str, Any] = {
        "sessions": [{"role": session.role, "outcome": result.outcome, "calls": result.calls,
                      "reason": result.reason}],
        "usage": session.ledger.snapshot(),
        "tokens": session.tokens,
        "models": list(dict.fromkeys(session.models)),
    }
    if session.memory is not None:
        update["notes"] = session.memory.scratchpad.as_dict()
        update["read_ranges"] = session.memory.reads.render()
    return update
