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


def live_llm(llama: LlamaServer) -> LLMSettings:
    # a 135M model on a shared CPU is slow: generous per-call time, small budgets
    return LLMSettings(base_url=llama.url, model="smollm2", timeout=300, max_retries=1, research_max_calls=6,
                       coder_max_calls=8, task_token_budget=200_000)


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
