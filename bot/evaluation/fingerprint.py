"""Fingerprints of an evaluation run: code, prompts, configuration, models, task set and checks.

Each part is a sha256 over a canonical form, so two reports can tell what differed. Code and
prompts are hashed file by file from the working tree (uncommitted edits count); the git commit,
when there is one, is recorded beside them for humans.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from bot.evaluation.external import CommandError, run_command
from bot.evaluation.taskset import HiddenTests, TaskSet
from foundation.gitrunner import GitError, GitTampered, git
from foundation.settings import Settings

CODE_PACKAGES = ("bot", "graph", "project", "foundation", "prompts", "standards")
# settings that change where or how the process listens, never what a task run does
_NOT_BEHAVIOUR = {"data_dir", "redis_url", "host", "port", "log_level", "gitlab", "github", "max_body_bytes"}
# the harness's own checks: a change here changes what "passed" means
_CHECK_MODULES = ("verification.py", "quality.py", "symbols.php", "taskrepos.py", "external.py")


def _digest(data: object) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


def tree_digest(root: Path, files: Iterable[Path] | None = None) -> str:
    """sha256 over (relative path, content hash) of every file under `root` except caches."""
    paths = files if files is not None else (p for p in root.rglob("*") if p.is_file())
    entries = sorted(
        (p.relative_to(root).as_posix(), hashlib.sha256(p.read_bytes()).hexdigest())
        for p in paths
        if "__pycache__" not in p.parts and p.suffix != ".pyc"
    )
    return _digest(entries)


def package_dir(name: str) -> Path:
    return Path(str(resources.files(name)))


def code_fingerprint(dirs: dict[str, Path] | None = None) -> str:
    dirs = dirs or {name: package_dir(name) for name in CODE_PACKAGES}
    return _digest({name: tree_digest(path) for name, path in sorted(dirs.items())})


def prompts_fingerprint(prompts_dir: Path | None = None) -> str:
    """The catalog, the forge terms and every template: any prompt edit changes it."""
    root = prompts_dir or package_dir("prompts")
    files = [p for p in root.rglob("*") if p.is_file() and p.suffix in (".toml", ".j2", ".md")]
    return tree_digest(root, files)


def config_inputs(settings: Settings) -> dict[str, Any]:
    """Settings that shape a run, without secrets or machine-local values."""
    dumped = settings.model_dump(mode="json", exclude=_NOT_BEHAVIOUR)
    cleaned: dict[str, Any] = _without_secrets(dumped, settings.model_dump(exclude=_NOT_BEHAVIOUR))
    return cleaned


# secret fields that are unset dump as None, which is no SecretStr: dropped by name too
_SECRET_FIELDS = frozenset({"api_key", "token", "webhook_secret", "private_key"})


def _without_secrets(dumped: Any, raw: Any) -> Any:
    if isinstance(dumped, dict) and isinstance(raw, dict):
        return {k: _without_secrets(v, raw[k]) for k, v in dumped.items()
                if not isinstance(raw[k], SecretStr) and not (raw[k] is None and k in _SECRET_FIELDS)}
    return dumped


def model_inputs(settings: Settings, synthetic: bool) -> dict[str, Any]:
    """Model ids and the settings that change their answers, per role."""
    if synthetic:
        from bot.evaluation.scripted import SYNTHETIC_MODEL

        return {"default": {"model": SYNTHETIC_MODEL}}
    llm = settings.llm
    models: dict[str, Any] = {
        "default": {"provider": llm.provider, "model": llm.model, "base_url": llm.base_url,
                    "temperature": llm.temperature}
    }
    for role, override in sorted(llm.roles.items()):
        models[role] = override.model_dump(mode="json", exclude={"api_key"})
    return models


def taskset_inputs(taskset: TaskSet) -> dict[str, Any]:
    return taskset.model_dump(mode="json")


def checks_inputs(taskset: TaskSet, taskset_dir: Path) -> dict[str, Any]:
    """Every task's verification, the hidden tests' content, the harness checks and tool versions."""
    hidden: dict[str, str] = {}
    for task in taskset.tasks:
        if isinstance(task.verify, HiddenTests):
            for rel in task.verify.files:
                hidden[rel] = hashlib.sha256((taskset_dir / rel).read_bytes()).hexdigest()
    harness = package_dir("bot.evaluation")
    return {
        "verify": {t.id: t.verify.model_dump(mode="json") for t in taskset.tasks},
        "hidden_tests": hidden,
        "harness": tree_digest(harness, [harness / name for name in _CHECK_MODULES]),
        "tools": {"php": _version(["php", "--version"]), "phpunit": _version(["phpunit", "--version"])},
    }


def _version(args: list[str]) -> str:
    try:
        out = run_command(args, check=False, timeout=30).stdout.strip()
    except CommandError:
        return "absent"
    return out.splitlines()[0] if out else "absent"


def git_commit(root: Path) -> str | None:
    try:
        return git(root, "rev-parse", "HEAD").strip()
    except (GitError, GitTampered):  # not a checkout, or one whose config the runner will not use
        return None


def fingerprints(
    settings: Settings, taskset: TaskSet, taskset_dir: Path, synthetic: bool, prompts_dir: Path | None = None
) -> tuple[dict[str, str], dict[str, Any]]:
    """(part → sha256, the hashed inputs that are small enough to show in the report)."""
    inputs = {
        "config": config_inputs(settings),
        "models": model_inputs(settings, synthetic),
        "checks": checks_inputs(taskset, taskset_dir),
        "git_commit": git_commit(package_dir("bot").parent),
    }
    prints = {
        "code": code_fingerprint(),
        "prompts": prompts_fingerprint(prompts_dir),
        "config": _digest(inputs["config"]),
        "models": _digest(inputs["models"]),
        "taskset": _digest(taskset_inputs(taskset)),
        "checks": _digest(inputs["checks"]),
    }
    return prints, inputs
