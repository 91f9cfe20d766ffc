"""The live lane (`pytest -m live`): a real model behind a real llama.cpp server.

Skipped unless `-m live` selects it (it is slow and needs the llama-cpp-python build); under
FORGEBOT_REQUIRE_TOOLS=1 (.ci/run) a missing build is a failure, not a skip.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from foundation.settings import LLMSettings
from tests.e2e.conftest import origin_url  # noqa: F401 - the PHP fixture repository, for the serve test
from tests.live.llama import LlamaServer, LlamaUnavailable
from tests.tools import need


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "live" in (config.getoption("-m") or ""):
        return
    skip = pytest.mark.skip(reason="live lane: run with `pytest -m live`")
    for item in items:
        if item.get_closest_marker("live"):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    try:
        server = LlamaServer(tmp_path_factory.mktemp("llama") / "server.log")
    except LlamaUnavailable as exc:
        need(False, f"the live lane's llama.cpp server ({exc})")
        raise
    yield server
    server.stop()


# The model's window as its server runs it (`LlamaServer`'s n_ctx): every request is fitted to it.
WINDOW = 8192


def live_llm(llama: LlamaServer) -> LLMSettings:
    """What an operator would set for a 135M model on a shared CPU: its real window, short answers
    (it writes nothing long that is usable, and a long answer is minutes of CPU), small call
    budgets, no retry of a call that already took minutes."""
    return LLMSettings(base_url=llama.url, model="smollm2", timeout=240, max_retries=0,
                       context_window_tokens=WINDOW, max_output_tokens=256, research_max_calls=2,
                       coder_max_calls=3, task_token_budget=200_000,
                       # llama-cpp-python refuses `json_schema` (HTTP 500): an operator who knows the
                       # server sets the method instead of letting every process probe it
                       structured_output="function_calling")


def live_env(llama: LlamaServer, data_dir: Path) -> dict[str, str]:
    """`live_llm` as the environment of a `forgebot` process (and no vector leg: the lane is the model's)."""
    import os

    llm = live_llm(llama)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORGEBOT_")}
    env.update({"FORGEBOT_DATA_DIR": str(data_dir), "FORGEBOT_EMBEDDER__KIND": "off",
                **{f"FORGEBOT_LLM__{name.upper()}": str(getattr(llm, name)) for name in (
                    "base_url", "model", "timeout", "max_retries", "context_window_tokens", "max_output_tokens",
                    "research_max_calls", "coder_max_calls", "task_token_budget", "structured_output")}})
    return env


def php_checkout(root: Path) -> Path:
    """The PHP fixture project as a git checkout with `main` and a `feature` branch changing it."""
    import shutil
    import subprocess

    repo = root / "repo"
    shutil.copytree(Path(__file__).parents[1] / "fixtures" / "php_project", repo)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t.invalid"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "init"], check=True)
    subprocess.run([*git, "checkout", "-qb", "feature"], check=True)
    calc = repo / "src" / "Calculator.php"
    calc.write_text(calc.read_text().replace("return $a + $b;", "return $a + $b + 0;"))
    subprocess.run([*git, "commit", "-qam", "tweak add"], check=True)
    return repo
