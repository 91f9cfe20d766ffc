"""`forgebot check` against real services: a private Redis, the store, the fake forges over HTTP, the
wire-level model server and the offline embedder; every failure is a FAIL line and a non-zero exit."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr

from bot.cli.check import run_checks
from bot.cli.main import main
from foundation.settings import Settings
from tests.fakes import model_server as wire
from tests.fakes.forge_http import FakeForgeState
from tests.fakes.model_server import ModelServer
from tests.fakes.server import ServerThread
from tests.models.conftest import llm_settings

pytestmark = pytest.mark.timeout(180)


async def test_every_line_passes_on_a_working_setup(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, server: ModelServer
) -> None:
    server.script(wire.tools(wire.call("echo", word="ready")), wire.unsupported_json_schema(),
                  wire.structured("CheckAnswer", {"word": "ready"}))
    configured = settings.model_copy(update={"redis_url": redis_url, "llm": llm_settings(server)})
    lines = {line.name: line for line in await run_checks(configured)}
    assert {n: line.status for n, line in lines.items()} == {
        "settings": "ok", "missing": "ok", "redis": "ok", "store": "ok", "gitlab": "ok", "github": "ok", "model": "ok",
        "embedder": "ok", "sandbox": "ok", "install": "ok", "signing": "skip", "hooks": "skip"}
    assert "@forgebot" in lines["gitlab"].detail and "@forgebot" in lines["github"].detail
    assert "auto → function_calling" in lines["model"].detail
    assert server.requests[0].tool_names == ["echo"] and "tool_choice" not in server.requests[0].body  # as loops ask


async def test_a_model_that_takes_no_temperature_and_no_max_tokens_passes_and_is_said_so(
    settings: Settings, redis_url: str, server: ModelServer
) -> None:
    """o3-mini refuses `max_tokens` and any temperature (OpenAI's reasoning models): the line failed, sending
    the operator to FORGEBOT_LLM__MODEL; now the calls go without them, and the line says so."""
    server.reasoning = "none"
    server.script(wire.tools(wire.call("echo", word="ready")), wire.structured("CheckAnswer", {"word": "ready"}))
    configured = settings.model_copy(update={"redis_url": redis_url, "llm": llm_settings(server, model="o3-mini")})
    skipped = frozenset({"embedder", "sandbox", "install"})
    lines = {line.name: line for line in await run_checks(configured, skip=skipped)}
    assert lines["model"].status == "ok", lines["model"].detail
    assert lines["model"].detail.endswith("; it takes no max_tokens: calls cap the output with max_completion_tokens"
                                          "; it takes no temperature but its own: calls go without one")
    assert [r.rejected is not None for r in server.requests] == [True, True, False, False]


async def test_ollamas_openai_api_with_a_smaller_window_fails_the_model_line(
    settings: Settings, redis_url: str, server: ModelServer
) -> None:
    """Ollama's OpenAI-compatible API silently cuts prompts longer than the window it runs the model with: the
    line passed, and every task read cut prompts. Now it fails, naming the window and the ways out."""
    server.ollama = True
    server.script(wire.tools(wire.call("echo", word="ready")))
    configured = settings.model_copy(update={"redis_url": redis_url, "llm": llm_settings(server)})
    skipped = frozenset({"embedder", "sandbox", "install"})
    lines = {line.name: line for line in await run_checks(configured, skip=skipped)}
    assert lines["model"].status == "FAIL"
    assert lines["model"].detail.startswith(
        f"the model call failed: Ollama's OpenAI-compatible API at {server.url}/v1 runs scripted-model with a "
        "4096-token window and silently cuts longer prompts"), lines["model"].detail
    assert lines["model"].detail.endswith("(check FORGEBOT_LLM__PROVIDER)")


async def test_a_server_that_refuses_to_let_the_model_choose_its_tools_fails_the_model_line(
    settings: Settings, redis_url: str, server: ModelServer
) -> None:
    """vLLM started without `--enable-auto-tool-choice` served the line's forced tool call, so the line passed,
    and refused every request of the tool loops, which let the model choose: each task failed at its first
    tool-using role. The line now asks as the loops do; the server's words and its address are said."""
    server.auto_tools = False
    server.script(wire.tools(wire.call("echo", word="ready")), wire.structured("CheckAnswer", {"word": "ready"}))
    configured = settings.model_copy(update={"redis_url": redis_url, "llm": llm_settings(server)})
    skipped = frozenset({"embedder", "sandbox", "install", "gitlab", "github"})
    lines = {line.name: line for line in await run_checks(configured, skip=skipped)}
    assert lines["model"].status == "FAIL", lines["model"].detail
    assert lines["model"].detail == (
        'the model call failed: HTTP 400: "auto" tool choice requires --enable-auto-tool-choice and '
        "--tool-call-parser to be set: forgebot's roles call tools, so the server must be started with tool "
        "calling on (vLLM: --enable-auto-tool-choice --tool-call-parser NAME; llama.cpp: --jinja) "
        "(check FORGEBOT_LLM__BASE_URL)")


async def test_a_model_that_calls_its_tool_only_when_made_to_passes_and_is_said_so(
    settings: Settings, redis_url: str, server: ModelServer
) -> None:
    """The tool loops let the model choose; one that answers in words when it may choose, and calls the tool
    when made to, works for structured hand-offs but may end a role's exploration early: the line says so."""
    server.script(wire.text("ready"), wire.tools(wire.call("echo", word="ready")),
                  wire.structured("CheckAnswer", {"word": "ready"}))
    configured = settings.model_copy(update={"redis_url": redis_url, "llm": llm_settings(server)})
    skipped = frozenset({"embedder", "sandbox", "install", "gitlab", "github"})
    lines = {line.name: line for line in await run_checks(configured, skip=skipped)}
    assert lines["model"].status == "ok", lines["model"].detail
    assert "tool call ok only when made to (the roles' tool loops let the model choose)" in lines["model"].detail
    assert "tool_choice" not in server.requests[0].body and server.requests[1].body["tool_choice"]


def test_failures_are_lines_and_a_non_zero_exit(
    tmp_path: Path, forge_server: ServerThread, fake_forge: FakeForgeState, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fake_forge.tokens = {"the-real-token"}
    with ModelServer() as gone:
        closed = gone.openai_url
    env = {"FORGEBOT_DATA_DIR": str(tmp_path / "data"), "FORGEBOT_GITLAB__URL": f"{forge_server.url}/gitlab",
           "FORGEBOT_GITLAB__TOKEN": "glpat-wrong-token-0123456789",
           "FORGEBOT_GITHUB__API_URL": f"{forge_server.url}/github", "FORGEBOT_GITHUB__TOKEN": "the-real-token",
           "FORGEBOT_GITHUB__MAX_RETRIES": "0",
           "FORGEBOT_LLM__BASE_URL": closed, "FORGEBOT_LLM__MAX_RETRIES": "0", "FORGEBOT_LLM__TIMEOUT": "5"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert main(["check", "--skip", "embedder"]) == 1
    out = capsys.readouterr().out
    rows = {line.split()[0]: line for line in out.splitlines()}
    assert rows["redis"].split()[1] == "skip" and rows["store"].split()[1] == "ok"
    assert rows["gitlab"].split()[1] == "FAIL" and "FORGEBOT_GITLAB__TOKEN" in rows["gitlab"]
    assert "glpat-wrong-token" not in out  # redacted, even inside an echoed error
    assert rows["github"].split()[1] == "FAIL" and "webhook secret NOT set" in rows["github"]
    assert rows["model"].split()[1] == "FAIL" and "FORGEBOT_LLM__BASE_URL" in rows["model"]


def test_a_secret_in_a_provider_error_is_redacted(settings: Settings, server: ModelServer) -> None:
    import asyncio

    key = "sk-live-secret-key-0123456789abcdef"
    server.script(wire.error(401, f"Incorrect API key provided: {key}", error_type="invalid_request_error"))
    configured = settings.model_copy(update={"llm": llm_settings(server, api_key=SecretStr(key))})
    (line,) = asyncio.run(run_checks(configured, skip=frozenset({"redis", "store", "gitlab", "github", "embedder"})
                                     ))[6:7]
    assert line.status == "FAIL" and key not in line.detail and "FORGEBOT_LLM__API_KEY" in line.detail


async def test_an_ollama_window_raised_on_the_host_is_seen_without_restarting_forgebot(
    settings: Settings, redis_url: str, server: ModelServer
) -> None:
    """The operator follows the line's advice (OLLAMA_CONTEXT_LENGTH on the Ollama host) and checks again in
    the same process (a service's worker): the larger window is asked for, not the smaller one remembered."""
    server.ollama = True
    server.script(wire.tools(wire.call("echo", word="ready")), wire.tools(wire.call("echo", word="ready")),
                  wire.structured("CheckAnswer", {"word": "ready"}))
    configured = settings.model_copy(update={"redis_url": redis_url, "llm": llm_settings(server)})
    skipped = frozenset({"embedder", "sandbox", "install", "gitlab", "github"})
    first = {line.name: line for line in await run_checks(configured, skip=skipped)}
    assert first["model"].status == "FAIL"
    server.ollama_window = 32768
    again = {line.name: line for line in await run_checks(configured, skip=skipped)}
    assert again["model"].status == "ok", again["model"].detail
