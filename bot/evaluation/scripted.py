"""The synthetic model: a scripted, LLM-free stand-in that lets the harness run end to end offline.

It answers structured-output calls by schema name: the decomposer gets one criterion (the task's
title); the analyzer gets the PHP declarations whose names the task text mentions, found by a plain
scan of the workspace. It proves the machinery (workspaces, routes, checks, reports); its results
say nothing about any model's effectiveness, and reports made with it are marked synthetic.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool

SYNTHETIC_MODEL = "forgebot-synthetic-baseline"


class ScriptedModelError(RuntimeError):
    """The synthetic model was asked for an answer it has no script for."""


class SyntheticChatModel(BaseChatModel):
    """Answers each structured-output call with `respond(schema_name)`."""

    respond: Callable[[str], dict[str, Any]]
    tool_names: tuple[str, ...] = ()
    model_name: str = SYNTHETIC_MODEL

    @property
    def _llm_type(self) -> str:
        return "forgebot-synthetic"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> SyntheticChatModel:
        names = tuple(convert_to_openai_tool(t)["function"]["name"] for t in tools)
        return self.model_copy(update={"tool_names": names})

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        if not self.tool_names:
            raise ScriptedModelError("the synthetic model only answers structured-output calls")
        if "finish_exploration" in self.tool_names:  # a role's tool loop: end it; synthesis asks for the schema
            done = AIMessage(content="synthetic model: no investigation")
            return ChatResult(generations=[ChatGeneration(message=done)])
        schema = self.tool_names[0]
        arguments = self.respond(schema)
        prompt_bytes = sum(len(str(m.content).encode()) for m in messages)
        answer_bytes = len(repr(arguments).encode())
        message = AIMessage(
            content="",
            tool_calls=[{"name": schema, "args": arguments, "id": f"synthetic-{schema}"}],
            # sizes, not a provider's count: bytes / 4 keeps the token columns of a synthetic report filled
            usage_metadata={
                "input_tokens": prompt_bytes // 4,
                "output_tokens": answer_bytes // 4,
                "total_tokens": prompt_bytes // 4 + answer_bytes // 4,
            },
        )
        return ChatResult(generations=[ChatGeneration(message=message)])


_CLASS_METHOD = re.compile(r"\b([A-Z][A-Za-z0-9_]*)::([A-Za-z_]\w*)")
_WORD = re.compile(r"`([A-Za-z_]\w*)`|\b([A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)+|[a-z]+(?:[A-Z][a-z0-9]*)+)\b")
_DECL = re.compile(r"^\s*(?:(?:abstract|final)\s+)*(class|interface|trait)\s+(\w+)|\bfunction\s+&?(\w+)\s*\(")


def mentioned_names(text: str) -> tuple[set[tuple[str, str]], set[str]]:
    """`Class::method` pairs and bare identifiers (CamelCase, camelCase, `backticked`) in the text."""
    pairs = {(m.group(1), m.group(2)) for m in _CLASS_METHOD.finditer(text)}
    words = {m.group(1) or m.group(2) for m in _WORD.finditer(text)}
    return pairs, words | {c for c, _ in pairs}


def find_declarations(root: Path, text: str, limit: int = 8) -> list[tuple[str, str, int]]:
    """(path, symbol, line) of declarations the text names, in file order; at most `limit`."""
    pairs, words = mentioned_names(text)
    found: list[tuple[str, str, int]] = []
    for path in sorted(root.rglob("*.php")):
        if path.name == "autoload.php" or ".git" in path.parts:
            continue
        current = ""
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            m = _DECL.search(line)
            if m is None:
                continue
            rel = path.relative_to(root).as_posix()
            if m.group(2):
                current = m.group(2)
                if current in words and not any(c == current for c, _ in pairs):
                    found.append((rel, current, number))
            elif (current, m.group(3)) in pairs or (m.group(3) in words and current in words):
                found.append((rel, f"{current}::{m.group(3)}", number))
            if len(found) >= limit:
                return found
    return found


def baseline_responder(task_text: str, workspace: Path) -> Callable[[str], dict[str, Any]]:
    """The synthetic answers for one task; unknown schemas raise ScriptedModelError."""
    title = task_text.strip().splitlines()[0][:200]

    def respond(schema: str) -> dict[str, Any]:
        if schema == "Decomposition":
            return {"criteria": [{"id": 1, "text": title}], "assumptions": [], "questions": []}
        if schema == "Analysis":
            hits = find_declarations(workspace, task_text)
            return {
                "summary": f"Declarations named in the task: {len(hits)} found by a name scan (synthetic).",
                "affected_files": sorted({path for path, _, _ in hits}),
                "symbols": [symbol for _, symbol, _ in hits],
                "evidence": [{"path": p, "start_line": n, "end_line": n, "note": s} for p, s, n in hits],
            }
        raise ScriptedModelError(f"the synthetic model has no script for {schema}")

    return respond
