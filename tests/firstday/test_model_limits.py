"""The first day with a real model's limits, through the running service: a webhook to the real
receiver, the worker on real Redis, and the product's own LangChain client talking to the scripted
model server over HTTP, where every request is measured as it went over the wire.

- a review of a small diff in a large file fits an 8k window, every request with its output cap;
- a window too small for the review's prompt stops the task naming the window it needs, and that
  window is enough;
- a review answer that still breaks a code-checked rule after its repair turn settles to the
  verdict its content supports, instead of failing the task;
- acceptance criteria the issue states are taken as written; an empty decomposition blocks on the
  model's missing answer, not the author's (in the issue's report, and in `forgebot run`'s closing line).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.worker.jobs import build_worker
from foundation.llm import chat_model
from foundation.settings import Settings
from graph.runtime.trace import read_trace, trace_path
from tests.e2e.conftest import allow_http_git, origin_url, pointed_at, post, task_states  # noqa: F401 - fixture
from tests.e2e.review_harness import deliver, fake_change, prepare
from tests.fakes import model_server as wire
from tests.fakes.forge_http import FakeForgeState, FakeIssue
from tests.fakes.model_server import ModelServer, Request
from tests.fakes.samples import sample
from tests.graph.review.conftest import ChangeRepo, git, write
from tests.intake import deliveries
from tests.models.conftest import llm_settings

pytestmark = pytest.mark.timeout(300)

WINDOW = 8192
REVIEWER_DONE = wire.text("I have read the diff; nothing more to inspect.")


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with ModelServer() as running:
        yield running


def wire_tokens(request: Request) -> int:
    """What the model has to read of one request, counted from the JSON that went over the wire:
    every message's text and tool calls, the tool schemas and the response format, at the
    pessimistic 3 UTF-8 bytes a token (real tokenizers need fewer) plus 4 a message."""
    texts: list[str] = []
    for message in request.messages:
        content = message.get("content")
        texts.append(content if isinstance(content, str) else json.dumps(content or ""))
        texts.append(json.dumps(message.get("tool_calls") or ""))
    texts.append(json.dumps(request.body.get("tools") or ""))
    texts.append(json.dumps(request.body.get("response_format") or ""))
    return sum(-(-len(t.encode()) // 3) for t in texts) + 4 * len(request.messages)


def cap_of(request: Request) -> int:
    cap = request.body.get("max_tokens") or request.body.get("max_completion_tokens")
    assert isinstance(cap, int) and cap > 0, f"a request without an output cap: {sorted(request.body)}"
    return cap


def large_file_change(root: Path) -> ChangeRepo:
    """`main` with a 15 KB PHP class (60 methods); `feature` changes 14 lines of it."""
    root.mkdir(parents=True)
    methods = "".join(
        f"    /** Rate {i}: the price of {i} units after the house discount and the regional tax. */\n"
        f"    public function rate{i}(int $units, float $price): float\n    {{\n"
        f"        $gross = $units * $price * {1 + i / 100:.2f};\n        return round($gross, 2);\n    }}\n\n"
        for i in range(60))
    text = f"<?php\nnamespace App;\n\nfinal class Pricing\n{{\n{methods}}}\n"
    git(root, "init", "-q", "-b", "main")
    write(root, {"src/Pricing.php": text, ".forgebot.yml": "commands:\n  lint:\n    phpcs: false\n"})
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    base = git(root, "rev-parse", "HEAD").strip()
    git(root, "checkout", "-q", "-b", "feature")
    changed = text
    for i in range(7):  # 7 methods x 2 lines = a 14-line diff
        changed = changed.replace(f"        return round($gross, 2);\n    }}\n\n    /** Rate {i + 1}:",
                                  f"        return round($gross, 3);\n    }}\n\n    /** Rate {i + 1}:")
        changed = changed.replace(f"$price * {1 + i / 100:.2f};", f"$price * {1 + i / 100:.2f} + 0.0;")
    repo = ChangeRepo(root=root, base=base, head=base)
    repo.commit({"src/Pricing.php": changed}, "round to three places")
    assert len(text.encode()) > 14_000
    return repo


async def run_worker(settings: Settings) -> Any:
    assert settings.redis_url
    worker = build_worker(settings, settings.redis_url, model_factory=lambda role: chat_model(settings.llm, role),
                          burst=True, handle_signals=False)
    try:
        await worker.main()
    finally:
        await worker.close()
    return worker


def review_summary(fake_forge: FakeForgeState) -> str:
    threads = fake_forge.threads_of("gitlab", "5", "change", 1)
    (summary,) = [t.comments[0].body for t in threads if "### Review" in t.comments[0].body]
    return summary


def notes_on_change(fake_forge: FakeForgeState) -> list[str]:
    return [c.body for t in fake_forge.threads_of("gitlab", "5", "change", 1) for c in t.comments]


@pytest.fixture
def review_repo(settings: Settings, redis_url: str, fake_forge: FakeForgeState, tmp_path: Path) -> ChangeRepo:
    repo = large_file_change(tmp_path / "repo")
    prepare(settings, redis_url, fake_forge, repo.root)
    fake_forge.add_change("gitlab", "5", 1, fake_change(repo))
    return repo


async def review_approved(settings: Settings, server: ModelServer, fake_forge: FakeForgeState, repo: ChangeRepo,
                          window: int, comment_id: int) -> None:
    """A `/review` with `window` configured, the scripted model approving it: the review is posted."""
    server.script(REVIEWER_DONE, wire.structured("Review", {
        "verdict": "approve", "summary": "Rounding to three places is consistent.", "verified_criteria": [1, 2]}))
    settings.llm = llm_settings(server, context_window_tokens=window)
    await deliver(settings, "gitlab", comment_id, f"file://{repo.root}")
    await run_worker(settings)
    assert "### Review: approved" in review_summary(fake_forge)


async def test_a_small_diff_in_a_large_file_is_reviewed_within_an_8k_window(
    settings: Settings, fake_forge: FakeForgeState, review_repo: ChangeRepo, server: ModelServer
) -> None:
    await review_approved(settings, server, fake_forge, review_repo, WINDOW, 101)
    assert len(server.requests) == 2  # the tool loop's one turn, then the structured review
    for request in server.requests:
        assert wire_tokens(request) + cap_of(request) <= WINDOW, (wire_tokens(request), cap_of(request))
    first = server.requests[0]
    assert "<diff" in json.dumps(first.messages) and first.tool_names  # the diff and the tools went along
    # the 15 KB file could not go along whole: it was outlined or left out, and the trace says the fit
    events = read_trace(trace_path(settings.data_dir, _task_of(settings)))
    (call,) = [e for e in events if e["kind"] == "model"]
    assert call["window"] == WINDOW and call["estimated_tokens"] <= WINDOW - call["output_cap"]
    assert call["injected"]["full"] == 0


def _task_of(settings: Settings) -> str:
    (path,) = (settings.data_dir / "traces").glob("*.jsonl")
    return path.stem


async def test_a_window_too_small_stops_the_review_naming_the_window_it_needs(
    settings: Settings, fake_forge: FakeForgeState, review_repo: ChangeRepo, server: ModelServer
) -> None:
    settings.llm = llm_settings(server, context_window_tokens=2048)
    await deliver(settings, "gitlab", 101, f"file://{review_repo.root}")
    await run_worker(settings)
    assert server.requests == []  # nothing was sent that the model could not hold
    (note,) = [n for n in notes_on_change(fake_forge) if "could not finish" in n]
    found = re.search(r"the reviewer step needs an AI model that can read at least (\d+) tokens at once, and the "
                      r"one configured reads 2048", note)
    assert found, note
    needed = int(found.group(1))
    assert 2048 < needed <= WINDOW

    # the window it named is enough: the same review, asked again, runs and fits it
    await review_approved(settings, server, fake_forge, review_repo, needed, 102)
    assert server.requests and all(wire_tokens(r) + cap_of(r) <= needed for r in server.requests)


async def test_an_approval_with_unverified_criteria_settles_as_incomplete(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, review_repo: ChangeRepo, server: ModelServer
) -> None:
    broken = {"verdict": "approve", "summary": "Looks fine to me.", "verified_criteria": [1],
              "unverified_criteria": [2], "findings": [
                  {"severity": "minor", "message": "three places differ from the invoices", "path": "src/Pricing.php",
                   "line": 11, "concern": "consistency"}]}
    server.script(REVIEWER_DONE, wire.structured("Review", broken), wire.structured("Review", broken))
    settings.llm = llm_settings(server, context_window_tokens=WINDOW)
    await deliver(settings, "gitlab", 101, f"file://{review_repo.root}")
    worker = await run_worker(settings)
    assert worker.jobs_failed == 0 and await task_states(settings) == [("done", "incomplete")]
    summary = review_summary(fake_forge)
    assert "### Review: incomplete" in summary and "three places differ from the invoices" in summary
    assert "broke a rule code checks even after a repair turn" in summary
    assert not [n for n in notes_on_change(fake_forge) if "could not finish" in n]
    assert "cannot approve with unverified criteria" in json.dumps(server.requests[2].messages)  # the repair turn
    events = read_trace(trace_path(settings.data_dir, _task_of(settings)))
    (invalid,) = [e for e in events if e["kind"] == "invalid_answer"]
    assert invalid["role"] == "reviewer" and invalid["settled"] is True


def _by_schema(answers: dict[str, dict[str, Any]]) -> wire.Responder:
    """Structured calls answered by their schema's name; tool-loop turns end at once."""

    def respond(request: Request) -> wire.Reply:
        schema = (request.body.get("response_format") or {}).get("json_schema", {}).get("name")
        if schema:
            return wire.structured(schema, answers[schema])
        return wire.text("Nothing more to read.")

    return respond


def _issue(settings: Settings, redis_url: str, fake_forge: FakeForgeState, origin_url: str,  # noqa: F811
           body: str) -> tuple[bytes, dict[str, str]]:
    """Issue 23 with `body`, and the delivery labelling it (which carries the text the task reads)."""
    settings.redis_url = redis_url
    settings.triggers.analyze_label = "Platform"  # the sample adds "Platform"
    allow_http_git(settings)
    fake_forge.grant("gitlab", "1", "1", 30)
    fake_forge.grant("gitlab", "1", "7", 30)  # the issue's author: its text counts
    fake_forge.add_issue("gitlab", "1", 23, FakeIssue(title="Subtraction", body=body))
    payload = sample("gitlab/issue.labels-changed.json")
    payload["object_attributes"].update(title="Subtraction", description=body)
    return deliveries.gitlab(pointed_at(json.dumps(payload).encode(), origin_url), "Issue Hook")


async def test_acceptance_criteria_the_issue_states_are_taken_as_written(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, origin_url: str, server: ModelServer  # noqa: F811
) -> None:
    body = ("The calculator cannot subtract.\n\n## Acceptance criteria\n- [ ] subtract(5, 3) returns 2\n"
            "- [ ] subtract() lives in App\\Calculator\n")
    label = _issue(settings, redis_url, fake_forge, origin_url, body)
    server.responder = _by_schema({
        "Decomposition": {"criteria": [], "questions": []},  # a weak model's empty answer, if it were asked
        "Analysis": {"summary": "subtract() goes beside add() in src/Calculator.php."},
    })
    settings.llm = llm_settings(server, context_window_tokens=WINDOW)
    assert await post(settings, "gitlab", *label) == 202
    await run_worker(settings)
    assert await task_states(settings) == [("done", "reported")]
    (report,) = [c.body for c in fake_forge.comments_on("gitlab", "1", 23) if "### Analysis" in c.body]
    assert "1. subtract(5, 3) returns 2\n2. subtract() lives in App\\Calculator" in report
    assert "(as the issue states them)" in report and "could not form" not in report
    asked = [(r.body.get("response_format") or {}).get("json_schema", {}).get("name") for r in server.requests]
    assert "Decomposition" not in asked


async def test_an_empty_decomposition_blocks_on_the_models_answer_not_the_authors(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, origin_url: str, server: ModelServer  # noqa: F811
) -> None:
    label = _issue(settings, redis_url, fake_forge, origin_url, "The calculator cannot subtract.")
    server.responder = _by_schema({"Decomposition": {"criteria": [], "questions": []}})
    settings.llm = llm_settings(server, context_window_tokens=WINDOW)
    assert await post(settings, "gitlab", *label) == 202
    await run_worker(settings)
    assert await task_states(settings) == [("done", "blocked")]  # reported, not waiting on the author
    (report,) = [c.body for c in fake_forge.comments_on("gitlab", "1", 23) if "blocked" in c.body]
    assert "the model gave no usable answer" in report and "missing is the model's, not yours" in report
    assert "Please answer" not in report and "could not form testable acceptance criteria" not in report


def test_a_local_run_blocked_on_the_models_empty_answer_says_whose_answer_is_missing(
    tmp_path: Path, server: ModelServer
) -> None:
    from tests.firstday.cli import forgebot
    from tests.repos import init_repo

    repo = tmp_path / "calc"
    repo.mkdir()
    (repo / "Calculator.php").write_text("<?php\nclass Calculator { public function add($a, $b) { return $a; } }\n")
    server.responder = _by_schema({"Decomposition": {"criteria": [], "questions": []}})
    seen = forgebot("run", "--repo", str(init_repo(repo)), "--mode", "analyze", "--task", "Subtraction\nAdd it.",
                    cwd=tmp_path, FORGEBOT_DATA_DIR=str(tmp_path / "data"), FORGEBOT_EMBEDDER__KIND="off",
                    FORGEBOT_LLM__BASE_URL=server.openai_url, FORGEBOT_LLM__MODEL=server.model)
    assert seen.code == 1, seen.err
    assert any("missing is the model's, not yours" in line for line in seen.out)
    assert seen.err[-1].startswith("forgebot run: did not reach its goal (blocked): the model gave no usable answer "
                                   "(it answered with neither acceptance criteria nor questions), not the task's text")


PROSE = "The total lacks tax: Cart::total in Cart.php should multiply by 1.2."


def _prose_analysis(repaired: dict[str, Any] | None) -> wire.Responder:
    """The decomposer answers; every structured Analysis request gets prose, except the repair turn
    (which shows the model its unusable answer) when `repaired` is given."""

    def respond(request: Request) -> wire.Reply:
        fmt = request.body.get("response_format") or {}
        name = (fmt.get("json_schema") or {}).get("name")
        choice = request.body.get("tool_choice")
        if not name and isinstance(choice, dict):
            name = (choice.get("function") or {}).get("name")
        if name == "Decomposition":
            return wire.structured(name, {"criteria": [{"id": 1, "text": "Totals include 20% VAT"}],
                                          "assumptions": [], "questions": []})
        if repaired is not None and "Your previous answer could not be used" in json.dumps(request.messages):
            return wire.structured("Analysis", repaired)
        return wire.text(PROSE)

    return respond


def _run_analyze(tmp_path: Path, server: ModelServer) -> Any:
    from tests.firstday.cli import forgebot
    from tests.repos import init_repo

    repo = tmp_path / "shop"
    repo.mkdir()
    (repo / "Cart.php").write_text("<?php\nclass Cart { public function total(): int { return 1; } }\n")
    return forgebot("run", "--repo", str(init_repo(repo)), "--mode", "analyze", "--task", "Tax\nAdd 20% VAT.",
                    cwd=tmp_path, FORGEBOT_DATA_DIR=str(tmp_path / "data"), FORGEBOT_EMBEDDER__KIND="off",
                    FORGEBOT_LLM__MAX_RETRIES="0", FORGEBOT_LLM__BASE_URL=server.openai_url,
                    FORGEBOT_LLM__MODEL=server.model)


def test_an_analysis_in_prose_gets_a_repair_turn_and_its_json_answer_is_the_report(
    tmp_path: Path, server: ModelServer
) -> None:
    server.responder = _prose_analysis({"summary": "Cart::total leaves out VAT.", "affected_files": ["Cart.php"]})
    seen = _run_analyze(tmp_path, server)
    assert seen.code == 0, seen.err
    assert "Cart::total leaves out VAT." in seen.out
    (repair,) = [r for r in server.requests if "Your previous answer could not be used" in json.dumps(r.messages)]
    assert f"The problem: the answer is not JSON (it began: {PROSE!r})" in repair.messages[-1]["content"]


def test_an_analysis_still_in_prose_after_its_repair_turn_fails_saying_so(tmp_path: Path, server: ModelServer) -> None:
    server.responder = _prose_analysis(None)
    seen = _run_analyze(tmp_path, server)
    assert seen.code == 1 and "Traceback" not in seen.text
    task = seen.err[-1].rsplit(" ", 1)[1]
    assert seen.err[-2:] == [
        "forgebot run: model answer invalid: its Analysis answer could not be used even after a repair turn: the "
        f"answer is not JSON (it began: {PROSE!r})",
        "forgebot run: failed: the AI model's answer in the analyzer step could not be used (model answer invalid, "
        "in analyzer); the model's answer broke the required schema; check FORGEBOT_LLM__STRUCTURED_OUTPUT or "
        f"FORGEBOT_LLM__ROLES__ANALYZER__STRUCTURED_OUTPUT or use a more capable model · task {task} · the whole "
        f"story: forgebot trace {task}"]
    assert sum("Your previous answer could not be used" in json.dumps(r.messages) for r in server.requests) == 1
    events = read_trace(trace_path(tmp_path / "data", task))
    (invalid,) = [e for e in events if e["kind"] == "invalid_answer"]
    assert invalid["role"] == "analyzer" and invalid["repaired"] is True and invalid["settled"] is False


async def _decomposed_within_the_window(settings: Settings, server: ModelServer,
                                       label: tuple[bytes, dict[str, str]]) -> str:
    """Analyze the labelled issue with an 8k window, every request within it; what the decomposer read."""
    server.responder = _by_schema({
        "Decomposition": {"criteria": [{"id": 1, "text": "subtract(5, 3) returns 2"}], "questions": []},
        "Analysis": {"summary": "subtract() goes beside add() in src/Calculator.php."},
    })
    settings.llm = llm_settings(server, context_window_tokens=WINDOW)
    assert await post(settings, "gitlab", *label) == 202
    await run_worker(settings)
    assert await task_states(settings) == [("done", "reported")]
    for request in server.requests:
        assert wire_tokens(request) + cap_of(request) <= WINDOW
    decomposer = next(r for r in server.requests
                      if (r.body.get("response_format") or {}).get("json_schema", {}).get("name") == "Decomposition")
    return json.dumps(decomposer.messages)


async def test_a_long_issue_thread_keeps_its_newest_comments_within_an_8k_window(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, origin_url: str, server: ModelServer  # noqa: F811
) -> None:
    """A long-running issue: sixty members' comments with pasted logs, about 18,000 tokens. The decomposer's
    first request outgrew an 8k window and the task stopped as "window too small". The newest comments
    that fit reach the model, every request fits its window, and the report says how many were left out."""
    label = _issue(settings, redis_url, fake_forge, origin_url, "The calculator cannot subtract.")
    for i in range(60):
        log = "".join(f"[2026-12-0{i % 9 + 1} 10:{n:02d}] worker {n}: subtraction failed, retrying\n"
                      for n in range(12))
        fake_forge.add_thread(("gitlab", "1", "issue", 23), f"Comment {i:02d}: seen again.\n{log}", author="dev")
    asked = await _decomposed_within_the_window(settings, server, label)
    assert "Comment 59:" in asked and "Comment 00:" not in asked
    left = 60 - len(set(re.findall(r"Comment (\d\d):", asked)))
    (report,) = [c.body for c in fake_forge.comments_on("gitlab", "1", 23) if "### Analysis" in c.body]
    assert f"the {left} earliest comment(s) by members: the model's context window holds only the newest" in report


async def test_a_giant_newest_comment_is_cut_to_the_window_keeping_its_end(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, origin_url: str, server: ModelServer  # noqa: F811
) -> None:
    """The newest comment is a whole pasted log (about 30,000 tokens): alone it outgrows the window, and
    keeping only what fits whole would leave out the thread, itself included. It is cut to the room left,
    its beginning and its end kept (where a log's error is)."""
    label = _issue(settings, redis_url, fake_forge, origin_url, "The calculator cannot subtract.")
    fake_forge.add_thread(("gitlab", "1", "issue", 23), "It fails on negative numbers.", author="dev")
    log = "".join(f"[10:{n % 60:02d}] step {n}: ok\n" for n in range(4000)) + "FATAL: subtract(5, 3) returned 8\n"
    fake_forge.add_thread(("gitlab", "1", "issue", 23), f"Full log:\n{log}", author="dev")
    asked = await _decomposed_within_the_window(settings, server, label)
    assert "Full log:" in asked and "FATAL: subtract(5, 3) returned 8" in asked
    assert "bytes cut to fit the model's context window" in asked
