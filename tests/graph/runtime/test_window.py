"""Fitting a tool-loop request to the model's window: what goes first, and when the task must stop."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage

from foundation.llm import output_cap
from graph.runtime.injection import Injection, InjectionLimits, inject
from graph.runtime.window import Window, WindowTooSmall, fit_turn, message_tokens
from tests.graph.runtime.script import call

TASK = HumanMessage("Review the change.")


def _history(groups: int, result_bytes: int = 3000) -> list[BaseMessage]:
    history: list[BaseMessage] = [TASK]
    for i in range(groups):
        ask = call("read_file", path=f"src/F{i}.php")
        history += [ask, ToolMessage("x" * result_bytes, tool_call_id=ask.tool_calls[0]["id"], name="read_file")]
    return history


def _files(root: Path, sizes: dict[str, int]) -> None:
    for name, size in sizes.items():
        (root / name).write_text("<?php\n" + "// line of code\n" * (size // 16))


def test_the_cap_is_a_quarter_of_the_window_at_most() -> None:
    assert output_cap(8192, 4096) == 2048 and output_cap(32_000, 4096) == 4096
    window = Window(tokens=8192, max_output=4096)
    assert window.prompt == 6144
    # the smallest window whose prompt room holds a request, with the cap that window would get
    for tokens in (900, 5000, 6144, 6145, 20_000):
        needed = window.needed(tokens)
        assert Window(needed, 4096).prompt >= tokens > Window(needed - 1, 4096).prompt


def test_old_calls_go_first_then_injected_files_shrink(tmp_path: Path) -> None:
    _files(tmp_path, {"Big.php": 12_000, "Small.php": 600})
    window = Window(tokens=8192, max_output=2048)

    def snapshot(limits: InjectionLimits | None) -> Injection:
        return inject(tmp_path, ["Big.php", "Small.php"], limits)

    roomy = fit_turn("reviewer", window, "system", _history(2, result_bytes=1000), 0, snapshot, reminder=True)
    assert roomy.pruned == 0 and [f.tier for f in roomy.injection.files] == ["full", "full"]

    crowded = fit_turn("reviewer", window, "system", _history(6), 0, snapshot, reminder=True)
    assert crowded.pruned > 0 and crowded.tokens <= window.prompt
    tight = fit_turn("reviewer", window, "system " * 1500, _history(3), 500, snapshot, reminder=True)
    assert tight.tokens <= window.prompt
    assert "full" not in [f.tier for f in tight.injection.files if f.path == "Big.php"]


def test_an_oversized_last_result_is_cut_saying_so(tmp_path: Path) -> None:
    window = Window(tokens=4096, max_output=1024)
    turn = fit_turn("analyzer", window, "system", _history(1, result_bytes=30_000), 0, lambda _: Injection(()),
                    reminder=False)
    assert turn.cut == 1 and turn.tokens <= window.prompt
    assert "cut to fit the model's context window" in str(turn.history[-1].content)


def test_what_cannot_be_fitted_stops_naming_the_window_it_needs() -> None:
    window = Window(tokens=2048, max_output=4096)
    task = HumanMessage("a diff line\n" * 1500)
    with pytest.raises(WindowTooSmall) as stopped:
        fit_turn("reviewer", window, "system", [task], 300, lambda _: Injection(()), reminder=False)
    needed = stopped.value.needed
    assert f"at least {needed} tokens" in str(stopped.value) and "CONTEXT_WINDOW_TOKENS is 2048" in str(stopped.value)
    assert Window(needed, 4096).prompt >= message_tokens([HumanMessage("system"), task]) + 300
    fitted = fit_turn("reviewer", Window(needed, 4096), "system", [task], 300, lambda _: Injection(()),
                      reminder=False)
    assert fitted.tokens <= Window(needed, 4096).prompt
