"""`forgebot eval` against an OpenAI-compatible endpoint: a local fake server, the real client.

The fake answers chat completions over HTTP the way vLLM or llama.cpp do, so this exercises the
path a user takes with FORGEBOT_LLM__BASE_URL / MODEL / API_KEY, without a network or a model.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import SecretStr
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from bot.cli.eval_cli import register
from foundation.settings import EmbedderSettings, LLMSettings, Settings
from tests.fakes.server import serving

pytestmark = [pytest.mark.php, pytest.mark.usefixtures("php_tools")]

ANSWERS: dict[str, dict[str, Any]] = {
    "Decomposition": {"criteria": [{"id": 1, "text": "Name where tableize converts names"}],
                      "assumptions": [], "questions": []},
    "Analysis": {"summary": "Inflector::tableize inserts underscores", "affected_files": [
        "Doctrine/Inflector/Inflector.php"], "symbols": ["Doctrine\\Inflector\\Inflector::tableize"],
        "evidence": [], "impact": "", "risks": [], "open_questions": []},
}


def _fake_openai(seen: list[dict[str, Any]]) -> Starlette:
    async def completions(request: Request) -> JSONResponse:
        body = await request.json()
        seen.append({"auth": request.headers.get("authorization"), **body})
        fmt = body.get("response_format") or {}
        if fmt.get("type") == "json_schema":
            name = fmt["json_schema"]["name"]
            message: dict[str, Any] = {"role": "assistant", "content": json.dumps(ANSWERS[name])}
        elif any(t["function"]["name"] == "finish_exploration" for t in body["tools"]):
            message = {"role": "assistant", "content": "Nothing to look up."}  # the analyzer's tool loop ends
        else:
            name = body["tools"][0]["function"]["name"]
            function = {"name": name, "arguments": json.dumps(ANSWERS[name])}
            call = {"id": "call_1", "type": "function", "function": function}
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
        return JSONResponse({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 20, "total_tokens": 70},
        })

    return Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])


def test_eval_with_an_openai_compatible_endpoint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    task = {
        "id": "where-tableize", "mode": "analyze", "package": "php-doctrine-inflector", "version": "2.0.6-1",
        "text": "Table names\nWhere are class names turned into table names?",
        "verify": {"kind": "locations", "files": ["Doctrine/Inflector/Inflector.php"],
                   "symbols": ["Inflector::tableize"]},
    }
    taskset = tmp_path / "one.yaml"
    taskset.write_text(yaml.safe_dump({"name": "one", "tasks": [task]}), encoding="utf-8")
    seen: list[dict[str, Any]] = []
    with serving(_fake_openai(seen)) as server:
        settings = Settings(
            _env_file=None,  # type: ignore[call-arg]
            _secrets_dir=None,
            data_dir=tmp_path / "data",
            llm=LLMSettings(base_url=f"{server.url}/v1", model="eval-model-7b", api_key=SecretStr("k-secret-123"),
                            max_retries=0, timeout=10),
            embedder=EmbedderSettings(kind="off"),  # the model endpoint is under test, not the vector leg
        )
        parser = argparse.ArgumentParser()
        register(parser.add_subparsers(dest="command", required=True))
        args = parser.parse_args(["eval", str(taskset), "--out", str(tmp_path / "out"), "--price-input", "1"])
        args.settings, args.data_dir = settings, settings.data_dir
        assert args.handler(args) == 0, capsys.readouterr().err

    text = (tmp_path / "out" / "report.json").read_text(encoding="utf-8")
    assert "k-secret-123" not in text
    report = json.loads(text)
    assert report["synthetic"] is False and report["notice"] == ""
    (result,) = report["tasks"]
    assert result["outcome"] == "passed", result
    # decomposer, the analyzer's tool loop (one call) and its synthesis: 70 tokens each
    assert result["roles"]["analyzer"]["models"] == ["eval-model-7b"] and result["tokens"] == 210
    assert result["cost_usd"] == pytest.approx(150 / 1e6)
    assert report["fingerprint_inputs"]["models"]["default"]["model"] == "eval-model-7b"
    assert [r["model"] for r in seen] == ["eval-model-7b"] * 3
    assert {r["auth"] for r in seen} == {"Bearer k-secret-123"}
