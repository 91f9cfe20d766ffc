"""`forgebot check`: verify the configuration against the real services, one table line each.

What a new installation gets wrong is found here instead of in the first task's failure comment:
Redis (when configured), the task store, each configured forge (the token works, whose account it
is, a webhook secret is set — the receiver refuses unsigned deliveries), the model endpoint (one
tiny tool call and one structured answer with the configured method; with `auto`, the method the
endpoint accepted) and the embedder. The exit status is 1 when any line failed. Details are
redacted: a provider's error text may echo a key.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel

from foundation.forge.models import ForgeKind
from graph.redact import redact, secrets_of

if TYPE_CHECKING:
    from foundation.settings import Settings

Status = Literal["ok", "FAIL", "skip"]


@dataclass(frozen=True)
class Line:
    name: str
    status: Status
    detail: str


class CheckAnswer(BaseModel):
    """The structured answer the model check asks for."""

    word: str


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("check", help="verify Redis, the store, the forges, the model and the embedder")
    parser.add_argument("--skip", action="append", default=[], choices=["redis", "store", "gitlab", "github",
                                                                         "model", "embedder"],
                        help="leave out one check (repeatable)")
    parser.set_defaults(handler=_handler)


def _handler(args: argparse.Namespace) -> int:
    lines = asyncio.run(run_checks(args.settings, skip=frozenset(args.skip)))
    print(render(lines))  # noqa: T201 - the command's output
    return 1 if any(line.status == "FAIL" for line in lines) else 0


def render(lines: list[Line]) -> str:
    width = max(len(line.name) for line in lines)
    return "\n".join(f"{line.name:<{width}}  {line.status:<4}  {line.detail}" for line in lines)


async def run_checks(settings: Settings, skip: frozenset[str] = frozenset()) -> list[Line]:
    checks: list[tuple[str, Callable[[Settings], Awaitable[Line]]]] = [
        ("redis", _redis), ("store", _store), ("gitlab", _gitlab), ("github", _github), ("model", _model),
        ("embedder", _embedder),
    ]
    secrets = secrets_of(settings)
    lines = []
    for name, check in checks:
        if name in skip:
            lines.append(Line(name, "skip", "--skip"))
            continue
        try:
            line = await check(settings)
        except Exception as exc:  # each line reports its own failure; one broken service hides no other
            line = Line(name, "FAIL", f"{type(exc).__name__}: {exc}")
        lines.append(Line(line.name, line.status, " ".join(redact(line.detail, secrets).split())[:300]))
    return lines


async def _redis(settings: Settings) -> Line:
    if not settings.redis_url:
        return Line("redis", "skip", "FORGEBOT_REDIS_URL not set (forgebot serve starts its own Redis)")
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(settings.redis_url, socket_timeout=5, socket_connect_timeout=5)
    try:
        await client.ping()
        version = (await client.info("server")).get("redis_version", "?")
    finally:
        await client.aclose()
    return Line("redis", "ok", f"PING answered (redis {version})")


async def _store(settings: Settings) -> Line:
    from bot.inbox import open_inbox

    inbox = await open_inbox(settings)
    await inbox.close()
    kind = "PostgreSQL (FORGEBOT_DATABASE_URL)" if settings.database_url else f"SQLite {settings.inbox_path}"
    return Line("store", "ok", f"opened {kind}")


def _webhook(secret: object) -> tuple[Status, str]:
    if secret is None:
        return "FAIL", "webhook secret NOT set: deliveries will be refused"
    return "ok", "webhook secret set"


async def _forge(settings: Settings, kind: ForgeKind, where: str, check: str) -> Line:
    """Ask the forge who the credentials act as (the same question serve and worker ask at start-up)."""
    from foundation.forge import bot_identity

    try:
        found = await bot_identity(settings, kind)
    except Exception as exc:
        return Line(kind, "FAIL", f"credentials rejected or {where} unreachable: {exc} (check {check})")
    conf = settings.gitlab if kind == "gitlab" else settings.github
    status, hook = _webhook(conf.webhook_secret)
    return Line(kind, status, f"{where}: credentials valid, bot @{found.login} (id {found.id}); {hook}")


async def _gitlab(settings: Settings) -> Line:
    if settings.gitlab.token is None:
        return Line("gitlab", "skip", "FORGEBOT_GITLAB__TOKEN not set")
    return await _forge(settings, "gitlab", settings.gitlab.url, "FORGEBOT_GITLAB__TOKEN and FORGEBOT_GITLAB__URL")


async def _github(settings: Settings) -> Line:
    gh = settings.github
    if gh.token is None and gh.app_id is None:
        return Line("github", "skip", "neither FORGEBOT_GITHUB__TOKEN nor FORGEBOT_GITHUB__APP_ID set")
    if gh.token is None and gh.private_key is None:
        return Line("github", "FAIL", "FORGEBOT_GITHUB__APP_ID needs FORGEBOT_GITHUB__PRIVATE_KEY")
    return await _forge(settings, "github", gh.api_url,
                        "FORGEBOT_GITHUB__TOKEN or FORGEBOT_GITHUB__APP_ID/PRIVATE_KEY and FORGEBOT_GITHUB__API_URL")


async def _model(settings: Settings) -> Line:
    from langchain_core.messages import HumanMessage
    from langchain_core.tools import StructuredTool

    from graph.llm import ModelProblem, chat_model, invoke, profile
    from graph.structured import LEARNED, ask_structured

    def echo(word: str) -> str:
        """Echo one word."""
        return word

    try:
        model = chat_model(settings.llm, "model")  # the default model: errors name the default settings
        prof = profile(model)
        bound = model.bind_tools([StructuredTool.from_function(echo)], tool_choice="echo")
        reply = await invoke(bound, [HumanMessage("Call the echo tool with the word 'ready'.")], prof)
        calls = getattr(reply, "tool_calls", None) or []
        if not calls:
            return Line("model", "FAIL", f"{prof.endpoint}: answered without the requested tool call; the model "
                        "must support tool calling (check FORGEBOT_LLM__MODEL)")
        await ask_structured(model, CheckAnswer, [HumanMessage("Answer with the word 'ready'.")])
    except ModelProblem as exc:
        return Line("model", "FAIL", str(exc))
    method = LEARNED.get(prof.endpoint) if prof.structured_output == "auto" else prof.structured_output
    label = f"auto → {method}" if prof.structured_output == "auto" else str(method)
    return Line("model", "ok", f"{prof.endpoint}: tool call ok; structured output ok ({label})")


async def _embedder(settings: Settings) -> Line:
    from project.embedding import embedder_for

    try:
        embedder = await asyncio.to_thread(embedder_for, settings.embedder)
    except Exception as exc:  # a missing model file, a bad endpoint: the line says which, redacted
        return Line("embedder", "FAIL", f"{type(exc).__name__}: {exc}")
    if embedder is None:
        return Line("embedder", "ok", "off (FORGEBOT_EMBEDDER__KIND=off): search runs without its vector leg")
    try:
        rows = await asyncio.to_thread(embedder.embed, ["forgebot check"])
    except Exception as exc:
        return Line("embedder", "FAIL", f"{type(exc).__name__}: {exc}")
    return Line("embedder", "ok", f"{embedder.model_id}: {rows.shape[1]} dimensions")
