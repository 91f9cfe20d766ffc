"""`forgebot run` as a user runs it (a subprocess): configuration problems are one line and exit 2,
and a llama.cpp-like server that rejects `json_schema` still gets the task to its report."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fakes import model_server as wire
from tests.fakes.model_server import ModelServer
from tests.fakes.private_ca import private_ca
from tests.fakes.provider_rules import REASONING_RULES
from tests.repos import init_repo

pytestmark = pytest.mark.timeout(300)  # a fresh interpreter imports LangChain and the SDKs
TASK = "Add tax to totals\nThe cart total must include 20% VAT."


def _run(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    repo = tmp_path / "repo"
    if not repo.exists():
        repo.mkdir()
        (repo / "Cart.php").write_text("<?php\nclass Cart { public function total(): int { return 1; } }\n")
        init_repo(repo)
    clean = {k: v for k, v in os.environ.items() if not k.startswith("FORGEBOT_")}
    # lexical and graph legs only: the model's wire is under test here, not the vector leg
    clean.update({"FORGEBOT_DATA_DIR": str(tmp_path / "data"), "FORGEBOT_EMBEDDER__KIND": "off", **env})
    return subprocess.run([sys.executable, "-m", "bot", "run", "--repo", str(repo), "--mode", "analyze",
                           "--task", TASK], env=clean, capture_output=True, text=True, timeout=280)


def test_no_model_configured_is_one_line_saying_what_to_set(tmp_path: Path) -> None:
    done = _run(tmp_path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "FORGEBOT_LLM__API_KEY" in done.stderr and "FORGEBOT_LLM__BASE_URL" in done.stderr


def test_an_unreachable_endpoint_is_one_line_naming_the_setting(tmp_path: Path) -> None:
    with ModelServer() as server:
        url = server.openai_url  # a port that was just free and now is closed again
    done = _run(tmp_path, FORGEBOT_LLM__BASE_URL=url, FORGEBOT_LLM__MAX_RETRIES="0", FORGEBOT_LOG_LEVEL="ERROR")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    (line,) = [s for s in done.stderr.splitlines() if s.startswith("forgebot run:")]
    assert line == ("forgebot run: the model failed a first test call, so nothing was started: cannot reach the "
                    "model endpoint (Connection error.) (check FORGEBOT_LLM__BASE_URL)")


def test_a_model_behind_a_ca_this_machine_does_not_trust_is_one_line_naming_ssl_cert_file(tmp_path: Path) -> None:
    """Not "cannot reach the model endpoint (Connection error.)": it answered, and no retry would change that."""
    ca, tls = private_ca(tmp_path)
    with ModelServer(tls=tls) as server:
        blank = dict.fromkeys(("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO"), "")
        done = _run(tmp_path, FORGEBOT_LLM__BASE_URL=server.openai_url, FORGEBOT_LOG_LEVEL="ERROR", **blank)
    assert done.returncode == 2, done.stderr
    (line,) = [s for s in done.stderr.splitlines() if s.startswith("forgebot run:")]
    assert line == ("forgebot run: the model failed a first test call, so nothing was started: the model endpoint's "
                    "TLS certificate is not trusted here (unable to get local issuer certificate); a private CA's "
                    "certificates go in a PEM file (check SSL_CERT_FILE)")
    assert not server.requests  # refused at the handshake


def llama_cpp_like(payloads: dict[str, dict[str, Any]]) -> wire.Responder:
    """Rejects json_schema like llama-cpp-python, answers forced calls with the schema's payload."""

    def respond(request: wire.Request) -> wire.Reply:
        fmt = request.body.get("response_format") or {}
        if fmt.get("type") == "json_schema":
            return wire.llama_cpp_python_rejects_json_schema()
        forced = (request.body.get("tool_choice") or {}) if isinstance(request.body.get("tool_choice"), dict) else {}
        name = (forced.get("function") or {}).get("name")
        if name in payloads:
            return wire.structured(name, payloads[name])
        return wire.text("I have what I need.")

    return respond


PAYLOADS = {
    "Decomposition": {"criteria": [{"id": 1, "text": "The total includes 20% VAT"}],
                      "assumptions": [], "questions": ["Not a question.", "Which rate applies to food?"]},
    "Analysis": {"summary": "Cart::total computes the total without tax.", "affected_files": ["Cart.php"]},
}


async def test_a_question_that_asks_nothing_is_not_asked(tmp_path: Path) -> None:
    from bot.worker.local import run_local
    from foundation.settings import Settings
    from tests.models.conftest import llm_settings

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "Cart.php").write_text("<?php\nclass Cart {}\n")
    init_repo(repo)
    with ModelServer() as server:
        server.responder = llama_cpp_like(PAYLOADS)
        settings = Settings(_env_file=None, data_dir=tmp_path / "data", llm=llm_settings(server))  # type: ignore[call-arg]
        result = await run_local(settings, repo, "analyze", TASK)
    assert result.state["questions"] == ["Which rate applies to food?"]


def test_analyze_runs_to_its_report_on_a_server_without_json_schema(tmp_path: Path) -> None:
    payloads = {
        "Decomposition": {"criteria": [{"id": 1, "text": "The total includes 20% VAT"}],
                          "assumptions": [], "questions": ["Not a question."]},
        "Analysis": {"summary": "Cart::total computes the total without tax.", "affected_files": ["Cart.php"]},
    }
    with ModelServer() as server:
        server.responder = llama_cpp_like(payloads)
        done = _run(tmp_path, FORGEBOT_LLM__BASE_URL=server.openai_url, FORGEBOT_LLM__MODEL="smol")
        requests = list(server.requests)
    assert done.returncode == 0, done.stderr
    assert "Cart::total computes the total without tax." in done.stdout and "forgebot · task" in done.stdout
    assert "Traceback" not in done.stderr
    json_schema = [r for r in requests if (r.body.get("response_format") or {}).get("type") == "json_schema"]
    assert len(json_schema) == 1  # rejected once, remembered for the rest of the run


def openai_like(payloads: dict[str, dict[str, Any]]) -> wire.Responder:
    """Answers a `json_schema` or forced-call request with the schema's payload, as OpenAI's API does."""

    def respond(request: wire.Request) -> wire.Reply:
        fmt = request.body.get("response_format") or {}
        forced = request.body.get("tool_choice")
        name = (fmt.get("json_schema") or {}).get("name") or (
            ((forced.get("function") or {}).get("name")) if isinstance(forced, dict) else None)
        return wire.structured(name, payloads[name]) if name in payloads else wire.text("I have what I need.")

    return respond


@pytest.mark.parametrize("rule", REASONING_RULES)
def test_a_reasoning_model_that_refuses_max_tokens_and_temperature_runs_the_task(tmp_path: Path, rule: str) -> None:
    """OpenAI's reasoning models (o3, o4-mini, gpt-5 and later, also behind Azure or a gateway) answer a request
    with `max_tokens`, or with a temperature other than their own, with a 400: each first call failed, nothing
    ran, and the operator was sent to FORGEBOT_LLM__MODEL. Each refusal is learned from the endpoint's first:
    the call is sent again without the parameter (the cap as `max_completion_tokens`), and so is every later
    call of the process."""
    with ModelServer(model="o4-mini") as server:
        server.reasoning = rule
        server.responder = openai_like(PAYLOADS)
        done = _run(tmp_path, FORGEBOT_LLM__BASE_URL=server.openai_url, FORGEBOT_LLM__MODEL="o4-mini")
        requests = list(server.requests)
    assert done.returncode == 0, done.stderr
    assert "Cart::total computes the total without tax." in done.stdout, done.stdout
    refused = [r.rejected["error"]["param"] for r in requests if r.rejected is not None]
    assert refused == ["max_tokens", "temperature"]  # once each for the process, not once a call
    later = [r.body for r in requests[2:]]
    assert len(later) > 3 and all("temperature" not in b and "max_tokens" not in b for b in later)
    assert all(b["max_completion_tokens"] > 0 for b in later)  # still capped
    assert "takes no temperature" in done.stderr and "takes no max_tokens" in done.stderr  # the log says each once


@pytest.mark.parametrize("said", ["running", "modelfile", "silent", "large"])
def test_ollamas_openai_api_with_a_smaller_window_stops_the_run_before_it_reads_cut_prompts(
    tmp_path: Path, said: str
) -> None:
    """Ollama's OpenAI-compatible API cuts a prompt longer than the window it runs the model with (4096 tokens
    unless the host says otherwise) from its start, without an error: the system prompt and the task were cut
    away and the model answered, well-formed, about what was left. The window Ollama says it runs the model
    with (`/api/ps`, else the Modelfile's num_ctx) is compared with forgebot's after the first answer; a
    server that does not say is let through with a warning, one whose window is large enough silently."""
    with ModelServer(model="qwen2.5-coder") as server:
        server.ollama = True
        server.ollama_window = {"running": 4096, "large": 32768}.get(said)
        server.ollama_num_ctx = 8192 if said == "modelfile" else None
        server.responder = openai_like(PAYLOADS)
        done = _run(tmp_path, FORGEBOT_LLM__BASE_URL=server.openai_url, FORGEBOT_LLM__MODEL="qwen2.5-coder")
    if said in ("running", "modelfile"):
        window, runs = (4096, "runs qwen2.5-coder with") if said == "running" else (
            8192, "gives qwen2.5-coder (Modelfile num_ctx)")
        assert done.returncode == 2, done.stderr
        (line,) = [s for s in done.stderr.splitlines() if s.startswith("forgebot run:")]
        assert line == (
            f"forgebot run: the model failed a first test call, so nothing was started: Ollama's OpenAI-compatible "
            f"API at {server.url}/v1 {runs} a {window}-token window and silently cuts longer prompts; forgebot's "
            f"reach 32000: set FORGEBOT_LLM__PROVIDER=ollama and FORGEBOT_LLM__BASE_URL={server.url} (the window "
            f"then goes with each request), OLLAMA_CONTEXT_LENGTH=32000 on the Ollama host, or "
            f"FORGEBOT_LLM__CONTEXT_WINDOW_TOKENS={window} (check FORGEBOT_LLM__PROVIDER)"), line
        return
    assert done.returncode == 0, done.stderr
    assert "Cart::total computes the total without tax." in done.stdout
    assert ("does not say the window it runs the model with" in done.stderr) == (said == "silent"), done.stderr


def test_a_llama_cpp_server_without_jinja_fails_at_once_naming_the_flag(tmp_path: Path) -> None:
    """llama.cpp's server started without `--jinja` answers any request with tools `500 tools param requires
    --jinja flag`. Read as an outage, each tool-using call was tried again and a task waited on deferrals,
    to end as "model unavailable ... check that it is up". It is a setting of the server: the run fails at
    its first tool call, saying which flag."""
    payloads = {"Decomposition": PAYLOADS["Decomposition"] | {"questions": []}, "Analysis": PAYLOADS["Analysis"]}
    with ModelServer() as server:
        server.jinja = False
        server.responder = openai_like(payloads)
        done = _run(tmp_path, FORGEBOT_LLM__BASE_URL=server.openai_url, FORGEBOT_LLM__MODEL="qwen",
                    FORGEBOT_LLM__STRUCTURED_OUTPUT="json_schema")
        requests = list(server.requests)
    assert done.returncode != 0, done.stdout
    with_tools = [r for r in requests if r.body.get("tools")]
    assert len(with_tools) == 1, [r.body.get("tools") is not None for r in requests]  # not tried again
    said = done.stdout + done.stderr
    assert "tools param requires --jinja flag: forgebot's roles call tools, so the server must be started with " \
           "tool calling on (vLLM: --enable-auto-tool-choice --tool-call-parser NAME; llama.cpp: --jinja)" in said, said
    assert "unavailable" not in said
