"""A real forgebot worker process for the durability tests and the chaos script.

`python -m tests.durability.worker_main CONFIG.json` runs `bot.worker.jobs.build_worker` (the product's
worker: leases, reaper, sweeper, arq signal handling) against a real Redis and the fake HTTP forge,
with scripted models in place of the LLM. Two test hooks, both read from the config:

* `delay`: seconds each model call takes, so an outside kill lands inside a node;
* `kill_dir`: a file `<kill_dir>/<task id>` naming a graph node arms a kill: the first model answer
  or forge write that task makes inside that node deletes the file and SIGKILLs this process (after
  the write, so the comment is on the forge but the node's checkpoint is not: the worst moment).
  `node!` stays armed, so every try dies there (a poison job).

With `llm` in the config the worker uses the product's own model clients on those settings (the
scripted model server over HTTP) instead, and `allowed_protocols` / `git_hosts` let it clone a
repository the test serves over HTTP (the implement route).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langgraph.config import get_config
from pydantic import SecretStr

from bot.intake.identity import Identities
from bot.worker.jobs import build_worker
from foundation.forge import Forge, ForgeKind, open_forge
from foundation.settings import (
    DurabilitySettings,
    EmbedderSettings,
    GitHubSettings,
    GitLabSettings,
    LLMSettings,
    Settings,
    WorkspaceSettings,
)
from graph.schemas import Analysis, Decomposition
from tests.durability.script import ANALYSIS, DECOMPOSITION
from tests.fakes.checkout import local_checkout, php_project
from tests.fakes.model_server import Reply, Request, ScriptedModel, answer, call, scripted, tools


def _where() -> tuple[str, str]:
    """(task id, node) of the graph step running in this context, or empty strings."""
    try:
        config = get_config()
    except RuntimeError:
        return "", ""
    node = str(config.get("metadata", {}).get("langgraph_node", ""))
    return str(config.get("configurable", {}).get("thread_id", "")), node


def maybe_die(kill_dir: str) -> None:
    """SIGKILL this process if this task's armed kill file names the node we are in (one shot)."""
    task, node = _where()
    if not kill_dir or not task:
        return
    path = Path(kill_dir) / task
    try:
        target = path.read_text().strip()
    except FileNotFoundError:
        return
    if target.rstrip("!") == node:  # "node!" stays armed: every try dies there (a poison job)
        if not target.endswith("!"):
            path.unlink(missing_ok=True)
        os.kill(os.getpid(), signal.SIGKILL)


class SlowModel(ScriptedModel):
    """Each call takes `delay` seconds and may kill the worker after its answer; the answers come
    from the scripted server (`model_factory`)."""

    delay: float = 0.0
    kill_dir: str = ""

    async def _agenerate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        logging.getLogger("scripted").info("model-call task=%s node=%s", *_where())
        await asyncio.sleep(self.delay)
        result = await super()._agenerate(messages, *args, **kwargs)
        maybe_die(self.kill_dir)
        return result


def model_factory(config: dict[str, Any]) -> Any:
    script: dict[str, Reply] = {
        "decomposer": answer(Decomposition, DECOMPOSITION, tokens=120),
        "analyzer": answer(Analysis, ANALYSIS, tokens=300),
    }
    finish = tools(call("finish_exploration", files=["src/Calculator.php"], reason="seen"))

    def build(role: str) -> BaseChatModel:
        def respond(request: Request) -> Reply:
            # the analyzer's tool loop (its tools offered, no answer format asked) ends its exploration;
            # every structured call gets the role's answer, as often as it is asked
            if role == "analyzer" and "finish_exploration" in request.tool_schemas:
                return finish
            return script[role]

        return scripted([], cls=SlowModel, responder=respond, delay=config.get("delay", 0.0),
                        kill_dir=config["kill_dir"])

    return build


class KillingForge:
    """The real adapter; a write inside the armed node is followed by SIGKILL."""

    def __init__(self, forge: Forge, kill_dir: str) -> None:
        self._forge, self._kill_dir = forge, kill_dir

    def __getattr__(self, name: str) -> Any:
        return getattr(self._forge, name)

    async def post_comment(self, *args: Any, **kwargs: Any) -> Any:
        ref = await self._forge.post_comment(*args, **kwargs)
        maybe_die(self._kill_dir)
        return ref


def settings_from(config: dict[str, Any]) -> Settings:
    extra: dict[str, Any] = {}
    if config.get("llm"):
        extra["llm"] = LLMSettings.model_validate(config["llm"])
    if config.get("git_hosts"):
        extra["workspace"] = WorkspaceSettings(allowed_protocols=("http",), git_hosts=tuple(config["git_hosts"]))
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        _secrets_dir=None,
        data_dir=Path(config["data_dir"]),
        redis_url=config["redis_url"],
        database_url=SecretStr(config["database_url"]) if config.get("database_url") else None,
        job_timeout=config.get("job_timeout", 60),
        max_tries=config.get("max_tries", 3),
        durability=DurabilitySettings(
            lease_seconds=config.get("lease_seconds", 2.0), reap_interval=config.get("reap_interval", 1)
        ),
        gitlab=GitLabSettings(url=f"{config['forge_url']}/gitlab", token=SecretStr(config["gitlab_token"]), timeout=5),
        github=GitHubSettings(
            api_url=f"{config['forge_url']}/github", token=SecretStr("unused"), timeout=5, max_retries=0
        ),
        embedder=EmbedderSettings(kind="off"),  # durability is under test, not the vector leg
        **extra,
    )


def main(path: str) -> None:
    config = json.loads(Path(path).read_text())
    log_format = f"%(created).3f w{os.getpid()} %(name)s %(message)s"  # the chaos script reads the times
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format=log_format)
    logging.getLogger("bot.worker.recovery").setLevel(logging.DEBUG)  # a line per reaper pass: tests wait on passes
    settings = settings_from(config)

    def forge_factory(kind: str) -> Forge:
        return cast(Forge, KillingForge(open_forge(settings, cast(ForgeKind, kind)), config["kill_dir"]))

    # every task analyses the PHP fixture project, copied and indexed per worker process
    project = php_project(Path(config["data_dir"]) / f"project-{os.getpid()}")
    worker = build_worker(
        settings,
        config["redis_url"],
        forge_factory=forge_factory,
        model_factory=None if config.get("llm") else model_factory(config),  # None: the product's clients
        checkout=local_checkout(project, key=f"local-{os.getpid()}"),
        identities=Identities(settings),  # as `forgebot worker`: its writes are found again by their author
    )
    worker.run()  # arq's own loop and signal handling, as `forgebot worker` runs it


if __name__ == "__main__":
    main(sys.argv[1])
