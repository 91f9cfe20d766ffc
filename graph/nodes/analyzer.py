"""analyzer: criteria → affected files, symbols, impact, risks and open questions, from the code.

A tool-loop role (`invoke_llm_with_tools`) with read-only tools: search, file and code-graph tools
over the task's checkout and index, the scratchpad, and the database tools when the repository
names a configured connection. It ends through `finish_exploration` (declared files must exist;
writable vs context-only) or a budget/guard stop; structured synthesis then answers from the
code-built handoff. Every `path:line` the answer cites is checked against the checkout.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.runtime import Runtime

import prompts
from foundation.forge import RepoRef
from graph.deps import Deps
from graph.evidence import check_evidence, existing_files
from graph.runtime.budget import call_budget
from graph.runtime.roles import RoleRun
from graph.runtime.scratchpad import Memory
from graph.runtime.synthesis import Declared
from graph.schemas import Analysis, FileScope, settle_analysis
from graph.state import TaskState
from graph.tools import tools_for
from graph.tools.database import ReadOnlyDatabase, connection_for
from graph.tools.investigation import investigation_tools, open_index
from project.embedding import embedder_for

_PATHLIKE = re.compile(r"[\w./-]+\.\w{1,5}")
_PATH_TOKEN = re.compile(r"[\w./-]+")
_DOT_WORD = re.compile(r"\.(?=\w)")


class NoCheckout(RuntimeError):
    """The analyzer needs the repository: state["workspace"] must name a checkout."""


def _root(state: TaskState) -> Path:
    root = Path(state.get("workspace") or "")
    if not state.get("workspace") or not root.is_dir():
        raise NoCheckout(f"no repository checkout for the analyzer (workspace={state.get('workspace')!r})")
    return root


def _database(state: TaskState, deps: Deps) -> ReadOnlyDatabase | None:
    """The connection `.forgebot.yml` names, if the server binds it to this repository (else refused)."""
    name = state.get("database") or ""
    if not name:
        return None
    return ReadOnlyDatabase(connection_for(deps.settings, RepoRef.model_validate(state["repo"]), name))


def _mentioned(root: Path, state: TaskState) -> list[str]:
    """Files the issue or its answers name: the first injection is seeded from the task text."""
    texts = [state.get("title", ""), state.get("body", ""), *(a["body"] for a in state.get("answers", []))]
    found = [m for t in texts for m in pathlike(t)]
    return existing_files(root, found)[0][:5]


def pathlike(text: str) -> list[str]:
    """`_PATHLIKE.findall(text)`, linear: each token is cut 6 characters after its last `.x`.

    Applied to the whole text, the pattern rescans every long dotless run from each of its characters
    (quadratic); past the last `.x` no match can start or end, so the cut changes no result.
    """
    found: list[str] = []
    for token in _PATH_TOKEN.findall(text):
        last = max((m.start() for m in _DOT_WORD.finditer(token)), default=-1)
        if last >= 1:
            found.extend(_PATHLIKE.findall(token[: last + 6]))
    return found


def _task_message(state: TaskState) -> HumanMessage:
    return HumanMessage(prompts.render(
        "analyzer.task", title=state.get("title", ""), body=state.get("body", ""), criteria=state["criteria"],
        discussion=state.get("discussion", []), answers=state.get("answers", []),
    ))


async def run(state: TaskState, runtime: Runtime[Deps]) -> dict[str, Any]:
    """Investigate with tools, finish, synthesize from the handoff, then check every citation."""
    deps, root = runtime.context, _root(state)
    system = prompts.render("analyzer.system", forge_terms=prompts.terms(state["forge"]))
    memory, declared = Memory(), Declared()
    role = RoleRun.open("analyzer", state, deps)
    seeded = _mentioned(root, state)
    role.session(
        root=root, system=lambda: system, targets=lambda: seeded, memory=memory,
        max_calls=call_budget(deps.settings.llm, "analyzer", criteria=len(state["criteria"])),
    )
    with open_index(state.get("index") or "") as conn:
        tools = investigation_tools(root, conn, _database(state, deps), embedder_for(deps.settings.embedder))
        tools.update(write_scratchpad=memory.scratchpad.tool(), finish_exploration=declared.tool(root))
        result = await role.loop(tools_for("analyzer", tools), [_task_message(state)])
    listed = [*declared.files, *(f"{p} (context only)" for p in declared.context_only)]
    answer = await role.conclude(Analysis, system=system, criteria=state["criteria"], memory=memory,
                                 result=result, declared=listed, settle=settle_analysis)
    update = role.update()
    update["analysis"] = _checked(root, answer)
    update["scope"] = FileScope(writable=declared.files, context_only=declared.context_only).model_dump()
    return update


def _checked(root: Path, answer: Analysis) -> dict[str, Any]:
    """The analysis with only citations and files that exist in the checkout; the rest listed as dropped."""
    evidence = check_evidence(root, answer.evidence)
    files, missing = existing_files(root, answer.affected_files)
    checked = answer.model_copy(update={"evidence": evidence.kept, "affected_files": files})
    return {**checked.model_dump(), "dropped_evidence": [*evidence.dropped, *(f"{m}: no such file" for m in missing)]}
