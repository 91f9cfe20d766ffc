"""`forgebot run` on checkouts without `.forgebot.yml`: the terminal says which profile the run
detected and why, before the run's result; the trace says it too; a checkout no profile matches runs
anyway and says so, and a `profile:` in the file wins over the files."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.model_server import ModelServer
from tests.firstday.cli import Typed, forgebot
from tests.firstday.test_cli_run import ANALYSIS, TASK, _env, _task_of, answering, decomposition
from tests.repos import init_repo

pytestmark = pytest.mark.timeout(600)


@pytest.fixture
def model() -> ModelServer:
    with ModelServer() as running:
        yield running  # type: ignore[misc]


def _checkout(root: Path, files: dict[str, str]) -> Path:
    root.mkdir()
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return init_repo(root)


def _analyze(tmp_path: Path, model: ModelServer, checkout: Path) -> Typed:
    model.responder = answering({"Decomposition": decomposition(), "Analysis": ANALYSIS})
    seen = forgebot("run", "--repo", str(checkout), "--mode", "analyze", "--task", TASK, cwd=tmp_path,
                    **_env(tmp_path, model))
    assert seen.code == 0, seen.err
    return seen


def _profile_lines(seen: Typed) -> list[str]:
    return [line for line in seen.err if line.startswith("forgebot run: profile: ")]


def test_a_typescript_checkout_is_said_to_be_typescript_and_why(tmp_path: Path, model: ModelServer) -> None:
    checkout = _checkout(tmp_path / "web", {"package.json": '{"name": "web"}', "tsconfig.json": "{}",
                                            "src/cart.ts": "export const total = 1;\n"})
    seen = _analyze(tmp_path, model, checkout)
    chosen = "`typescript` (detected: package.json at the top level, with tsconfig.json)"
    assert _profile_lines(seen) == [f"forgebot run: profile: {chosen}"]
    trace = forgebot("trace", _task_of(seen), cwd=tmp_path, **_env(tmp_path))
    assert trace.code == 0 and any(line.endswith(f"profile: {chosen}") for line in trace.out), trace.out


def test_a_checkout_no_profile_matches_runs_and_says_so(tmp_path: Path, model: ModelServer) -> None:
    checkout = _checkout(tmp_path / "tool", {"main.go": "package main\n", "go.mod": "module tool\n"})
    seen = _analyze(tmp_path, model, checkout)
    (line,) = _profile_lines(seen)
    assert line.startswith("forgebot run: profile: none (nothing matched: no composer.json, package.json, "
                           "pyproject.toml, setup.cfg or setup.py at the top level")
    assert line.endswith("name one with `profile:` in `.forgebot.yml` (known: javascript, php, python, typescript))")


def test_a_named_profile_wins(tmp_path: Path, model: ModelServer) -> None:
    checkout = _checkout(tmp_path / "lib", {".forgebot.yml": "profile: php\n", "pyproject.toml": "", "lib.py": ""})
    seen = _analyze(tmp_path, model, checkout)
    assert _profile_lines(seen) == ["forgebot run: profile: `php` (set: named in `.forgebot.yml`)"]
