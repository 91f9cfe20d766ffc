"""`forgebot check`: verify the configuration against the real services, one table line each.

What a new installation gets wrong is found here instead of in the first task's failure comment:
Redis (when configured), the task store, each configured forge (the token works, whose account it
is, a webhook secret is set — the receiver refuses unsigned deliveries), the model endpoint (one
tiny tool call and one structured answer with the configured method; with `auto`, the method the
endpoint accepted), the embedder, and the check sandbox (one command run as a repository's check
would be: namespaces or why not, whether a root worker may run checks, whether the memory and
process limits are held by the kernel or only sampled), how installs reach the network, and the key the
commits are signed with. The exit status is 1 when any line failed.
Details are redacted: a provider's error text may echo a key.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import re
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel

from bot.intake.identity import ForgeKind as Hosted
from bot.intake.identity import configured, keep_author, write_scope_problem
from foundation.forge.models import ForgeKind
from foundation.redact import redact, secrets_of
from foundation.settings import DEFAULT_AUTHOR

if TYPE_CHECKING:
    from foundation.forge import BotIdentity
    from foundation.settings import Settings

Status = Literal["ok", "FAIL", "skip"]
# a line's detail at most: a provider's echoed error is cut, a line that names every way out is not
DETAIL_CHARS = 500


@dataclass(frozen=True)
class Line:
    name: str
    status: Status
    detail: str


class CheckAnswer(BaseModel):
    """The structured answer the model check asks for."""

    word: str


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("check", help="verify Redis, the store, the forges, the model, the embedder, the "
                            "check sandbox and the installs' way out")
    parser.add_argument("--skip", action="append", default=[], choices=["settings", "missing", "redis", "store",
                                                                         "gitlab", "github", "model", "embedder",
                                                                         "sandbox", "install", "signing", "hooks"],
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
    checks: list[tuple[str, Callable[[Settings], Awaitable[Line | list[Line]]]]] = [
        ("settings", _variables), ("missing", _missing), ("redis", _redis), ("store", _store), ("gitlab", _gitlab),
        ("github", _github), ("model", _model), ("embedder", _embedder), ("sandbox", _sandbox),
        ("install", _install), ("signing", _signing), ("hooks", _hooks),
    ]
    secrets = secrets_of(settings)
    lines = []
    for name, check in checks:
        if name in skip:
            lines.append(Line(name, "skip", "--skip"))
            continue
        try:
            found = await check(settings)
        except Exception as exc:  # each line reports its own failure; one broken service hides no other
            found = Line(name, "FAIL", f"{type(exc).__name__}: {exc}")
        for line in found if isinstance(found, list) else [found]:
            lines.append(Line(line.name, line.status, " ".join(redact(line.detail, secrets).split())[:DETAIL_CHARS]))
    return lines


async def _variables(settings: Settings) -> Line:
    """A misspelt variable does nothing: name each `FORGEBOT_*` variable no setting reads."""
    unknown = type(settings).unknown_variables()
    if unknown:
        return Line("settings", "FAIL", "; ".join(unknown))
    return Line("settings", "ok", "every FORGEBOT_* variable is a setting")


async def _missing(settings: Settings) -> list[Line]:
    """What the configuration lacks, one line each, in the words and from the same source as `/readyz`."""
    from bot.web.readiness import gaps

    found = gaps(settings)
    if found:
        return [Line("missing", "FAIL", str(gap)) for gap in found]
    return [Line("missing", "ok", "nothing: a forge, its webhook secret and a model are configured")]


async def _redis(settings: Settings) -> Line:
    if not settings.redis_url:
        return Line("redis", "skip", "FORGEBOT_REDIS_URL not set (forgebot serve starts its own Redis)")
    import redis.asyncio as aioredis

    from bot.tasks.queue import read_eviction_policy

    client = aioredis.Redis.from_url(settings.redis_url, socket_timeout=5, socket_connect_timeout=5)
    try:
        await client.ping()
        version = (await client.info("server")).get("redis_version", "?")
        policy = await read_eviction_policy(client)
    finally:
        await client.aclose()
    said = f"PING answered (redis {version})"
    if policy is None:
        return Line("redis", "ok", f"{said}; maxmemory-policy not readable (CONFIG and INFO refused): make sure "
                    "it is noeviction")
    if policy != "noeviction":
        return Line("redis", "FAIL", f"{said}; maxmemory-policy {policy}: under memory pressure Redis evicts queued "
                    "jobs (arq's keys expire, so volatile-* policies take them too), which the inbox's sweeper "
                    "queues again only later: set it to noeviction (a managed Redis: in its parameter group)")
    return Line("redis", "ok", f"{said}; maxmemory-policy noeviction")


async def _store(settings: Settings) -> Line:
    from bot.tasks.inbox import open_inbox

    inbox = await open_inbox(settings)
    await inbox.close()
    kind = "PostgreSQL (FORGEBOT_DATABASE_URL)" if settings.database_url else f"SQLite {settings.inbox_path}"
    return Line("store", "ok", f"opened {kind}")


def _webhook(secret: object) -> tuple[Status, str]:
    if secret is None:
        return "FAIL", "webhook secret NOT set: deliveries will be refused"
    return "ok", "webhook secret set"


_STATUS = re.compile(r"^\w+ (\d{3})\b")  # the adapters' "gitlab 502: ..." for an HTTP answer


def _not_found(kind: ForgeKind, where: str) -> str:
    """A 404 for "who am I" is a wrong address, not a wrong token: say which one is right."""
    base = where.rstrip("/")
    if kind == "gitlab" and base.endswith("/api/v4"):
        return (f"{where} answered 404: FORGEBOT_GITLAB__URL is the instance's address without the API path; "
                f"drop /api/v4 ({base.removesuffix('/api/v4')})")
    if kind == "gitlab":
        return (f"{base}/api/v4/user answered 404: FORGEBOT_GITLAB__URL must be the GitLab instance's address "
                "(https://gitlab.example.com)")
    return (f"{base}/user answered 404: FORGEBOT_GITHUB__API_URL must be the REST API root "
            "(https://api.github.com; GitHub Enterprise: https://HOST/api/v3)")


def unreachable(kind: ForgeKind, where: str, exc: Exception) -> str:
    """What to check when the forge at `where` gave no answer (or a 5xx): `forgebot check` and `hooks` say it."""
    from foundation import cabundle

    url = "FORGEBOT_GITLAB__URL" if kind == "gitlab" else "FORGEBOT_GITHUB__API_URL"
    untrusted = cabundle.untrusted(exc)
    if untrusted:  # it answered, with a certificate no CA here signed: not an address to check
        return f"{where}: its TLS certificate is not trusted here ({untrusted}); {cabundle.hint(cabundle.REQUESTS)}"
    status = _STATUS.match(str(exc))
    if status:
        return f"{where} answered HTTP {status.group(1)}: the forge is up but failing; try again later"
    why = str(exc).partition(": ")[2] or str(exc)
    return f"cannot connect to {where} ({why}): check {url} and that this machine reaches it"


def _pinned(settings: Settings, kind: ForgeKind, found: BotIdentity) -> str | None:
    """A pinned bot id or login that is not the token's user: the bot would not know its own comments."""
    if kind == "gitlab" and settings.gitlab.bot_user_id not in (None, found.id):
        pinned = f"FORGEBOT_GITLAB__BOT_USER_ID={settings.gitlab.bot_user_id}"
    elif kind == "github" and settings.github.bot_login and settings.github.bot_login.lower() != found.login.lower():
        pinned = f"FORGEBOT_GITHUB__BOT_LOGIN={settings.github.bot_login}"
    else:
        return None
    return (f"{pinned}, but the token acts as @{found.login} (id {found.id}): the bot would take its own comments "
            "for someone else's; unset it (the bot asks the forge) or pin the token's user")


async def _forge(settings: Settings, kind: ForgeKind, where: str, token: str) -> Line:
    """Ask the forge who the credentials act as (the same question serve and worker ask at start-up)."""
    from foundation.forge import ForgeAuthError, ForgeNotFound, ForgeUnavailable, ForgeUntrusted, bot_identity

    try:
        found = await bot_identity(settings, kind)
    except ForgeAuthError as exc:
        return Line(kind, "FAIL", f"{where} refused the credentials ({exc}): check {token}")
    except ForgeNotFound:
        return Line(kind, "FAIL", _not_found(kind, where))
    except (ForgeUnavailable, ForgeUntrusted) as exc:
        return Line(kind, "FAIL", unreachable(kind, where, exc))
    short = write_scope_problem(kind, found)
    mismatch = _pinned(settings, kind, found) or (f"{short}; check {token}" if short else "")
    if mismatch:
        return Line(kind, "FAIL", mismatch)
    conf = settings.gitlab if kind == "gitlab" else settings.github
    status, hook = _webhook(conf.webhook_secret)
    return Line(kind, status, f"{where}: credentials valid, bot @{found.login} (id {found.id}){_expiry(found)}; {hook}"
                f"{_author(settings, kind, found)}")


def _author(settings: Settings, kind: ForgeKind, found: BotIdentity) -> str:
    """Whom the bot's commits name as author, where it matters: GitLab's push rules on authors ("Reject
    unverified users", "Commit author's email") refuse a commit whose email is none the bot account owns,
    and a task learns it only when its push is refused, after all its work.

    Unset, the author is the account's own as the forge shows it (`WorkspaceSettings.author`): said. Set
    to none of the account's emails: said with the one to set. "" when the forge shows no email."""
    if not found.emails:
        return ""
    email = settings.workspace.author_email
    if email is None:
        keep_author(settings, kind, found)
        name, email = settings.workspace.author(kind)
        return f"; commits authored as {name} <{email}>, the bot account's"
    if email.lower() in (known.lower() for known in found.emails):
        return ""
    return (f"; author {email} is no email of @{found.login}, which push rules on authors refuse: set "
            f"FORGEBOT_WORKSPACE__AUTHOR_EMAIL={found.emails[0]}, or unset it for the account's own")


EXPIRY_WARNING_DAYS = 14


def _expiry(found: BotIdentity) -> str:
    """", expires on D (in N days)" for a token that expires within EXPIRY_WARNING_DAYS, else ""."""
    try:
        day = datetime.date.fromisoformat(found.expires_at[:10])
    except ValueError:
        return ""
    left = (day - datetime.date.today()).days
    return f", token expires on {day} (in {left} days)" if left <= EXPIRY_WARNING_DAYS else ""


async def _gitlab(settings: Settings) -> Line:
    if settings.gitlab.token is None:
        return Line("gitlab", "skip", "FORGEBOT_GITLAB__TOKEN not set")
    return await _forge(settings, "gitlab", settings.gitlab.url, "FORGEBOT_GITLAB__TOKEN")


async def _github(settings: Settings) -> Line:
    gh = settings.github
    if gh.token is None and gh.app_id is None:
        return Line("github", "skip", "neither FORGEBOT_GITHUB__TOKEN nor FORGEBOT_GITHUB__APP_ID set")
    if gh.token is None and gh.private_key is None:
        return Line("github", "FAIL", "FORGEBOT_GITHUB__APP_ID needs FORGEBOT_GITHUB__PRIVATE_KEY")
    app = gh.app_id is not None and gh.private_key is not None
    token = "FORGEBOT_GITHUB__APP_ID and FORGEBOT_GITHUB__PRIVATE_KEY" if app else "FORGEBOT_GITHUB__TOKEN"
    return await _forge(settings, "github", gh.api_url, token)


async def _model(settings: Settings) -> Line:
    from langchain_core.messages import BaseMessage, HumanMessage
    from langchain_core.tools import StructuredTool

    from foundation import modelparams
    from foundation.llm import ModelProblem, chat_model, invoke, profile, said_if_slow
    from graph.structured import LEARNED, ask_structured

    def echo(word: str) -> str:
        """Echo one word."""
        return word

    def waiting() -> None:
        sys.stderr.write(f"forgebot check: waiting for the model at {prof.endpoint} to answer (up to "
                         f"{settings.llm.timeout:.0f} s: FORGEBOT_LLM__TIMEOUT)\n")

    try:
        model = chat_model(settings.llm, "model")  # the default model: errors name the default settings
        # one try: a check says what is wrong now, and three tries of a silent endpoint took six minutes
        prof = replace(profile(model), max_retries=0)
        tool = StructuredTool.from_function(echo)
        asked: list[BaseMessage] = [HumanMessage("Call the echo tool with the word 'ready'.")]
        # as the roles' tool loops ask: the model chooses (vLLM refuses that unless started for it)
        chose = await said_if_slow(invoke(model.bind_tools([tool]), asked, prof), waiting)
        made = None if getattr(chose, "tool_calls", None) else await invoke(
            model.bind_tools([tool], tool_choice="echo"), asked, prof)
        if made is not None and not getattr(made, "tool_calls", None):
            return Line("model", "FAIL", f"{prof.endpoint}: answered without the requested tool call; the model "
                        "must support tool calling (check FORGEBOT_LLM__MODEL)")
        await ask_structured(model, CheckAnswer, [HumanMessage("Answer with the word 'ready'.")])
    except ModelProblem as exc:
        return Line("model", "FAIL", str(exc))
    method = LEARNED.get(prof.endpoint) if prof.structured_output == "auto" else prof.structured_output
    label = f"auto → {method}" if prof.structured_output == "auto" else str(method)
    tools = "tool call ok" if made is None else \
        "tool call ok only when made to (the roles' tool loops let the model choose)"
    return Line("model", "ok", f"{prof.endpoint}: {tools}; structured output ok ({label})"
                f"{modelparams.said(prof.endpoint)}")


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
        from foundation import cabundle

        if untrusted := cabundle.untrusted(exc):
            return Line("embedder", "FAIL", f"{settings.embedder.base_url}: its TLS certificate is not trusted here "
                        f"({untrusted}); {cabundle.HINT}")
        return Line("embedder", "FAIL", f"{type(exc).__name__}: {exc}")
    return Line("embedder", "ok", f"{embedder.model_id}: {rows.shape[1]} dimensions")


async def _install(settings: Settings) -> Line:
    """How an install that asks for network leaves this machine (never the proxy's password): a worker's
    HTTPS_PROXY that is no http:// proxy leaves every install without network, and fails the line."""
    from foundation.proxy import HttpProxy
    from project.checks import install_proxy

    if not settings.sandbox.install_network:
        return Line("install", "ok", "installs get no network (FORGEBOT_SANDBOX__INSTALL_NETWORK=false)")
    wrong, given = _install_secrets(settings)
    if wrong:
        return Line("install", "FAIL", wrong)
    chosen = install_proxy(settings)
    if chosen is None:
        return Line("install", "ok", f"installs that ask for network connect directly{_install_trust()}{given}")
    told = "FORGEBOT_SANDBOX__INSTALL_PROXY" if settings.sandbox.install_proxy is not None else "HTTPS_PROXY"
    try:
        proxy = HttpProxy.parse(chosen.get_secret_value())
    except ValueError as exc:
        return Line("install", "FAIL", f"installs get no network: {told} is unusable ({exc}); set "
                    "FORGEBOT_SANDBOX__INSTALL_PROXY to an http:// proxy, or to `direct`")
    return Line("install", "ok", f"installs that ask for network leave through the proxy {proxy.host}:{proxy.port} "
                f"({told}){_install_trust()}{given}")


def _install_trust() -> str:
    """Which CA file an install with network trusts beside the public CAs (`project.sandbox`), if the operator
    named one."""
    from foundation import cabundle

    variable, path = cabundle.operators(os.environ)
    return f"; they trust the CAs of {variable}={path} and the public ones" if variable else ""


def _install_secrets(settings: Settings) -> tuple[str, str]:
    """(why `FORGEBOT_SANDBOX__INSTALL_SECRETS` cannot work, which install each variable goes to): a name no
    profile's install takes is never given, and a COMPOSER_AUTH that is no JSON object makes composer stop."""
    from project.profiles import available_profiles, load_profile

    takers: dict[str, list[str]] = {}
    for name in available_profiles():
        install = load_profile(name).install
        for variable in install.secret_env if install else ():
            takers.setdefault(variable, []).append(name)
    given = []
    for variable, value in sorted(settings.sandbox.install_secrets.items()):
        if variable not in takers:
            known = ", ".join(f"{v} ({' '.join(p)})" for v, p in sorted(takers.items())) or "none"
            return (f"FORGEBOT_SANDBOX__INSTALL_SECRETS names {variable}, which no profile's install takes "
                    f"(they take: {known}); it is never given"), ""
        if variable == "COMPOSER_AUTH":
            try:
                parsed = json.loads(value.get_secret_value())
            except ValueError:
                parsed = None
            if not isinstance(parsed, dict):
                return ("COMPOSER_AUTH in FORGEBOT_SANDBOX__INSTALL_SECRETS is not a JSON object "
                        '({"http-basic": {"HOST": {"username": …, "password": …}}}): composer stops at it'), ""
        given.append(f"{variable} to the {' and '.join(takers[variable])} install")
    return "", f"; {', '.join(given)}" if given else ""


async def _signing(settings: Settings) -> Line:
    """Whether the bot's commits are signed, by which key (its fingerprint and public line, what the operator
    registers on the bot account); a key that cannot sign unattended fails the line before a push is refused."""
    from foundation.signing import SigningError, public_key

    key = settings.workspace.signing_key
    if key is None:
        return Line("signing", "skip", "FORGEBOT_WORKSPACE__SIGNING_KEY not set: commits are not signed")
    try:
        public, fingerprint = await asyncio.to_thread(public_key, key)
    except SigningError as exc:
        return Line("signing", "FAIL", f"commits cannot be signed: {exc}")
    shown = public if len(public) <= 160 else "`ssh-keygen -y -f KEYFILE` prints it"
    kinds: tuple[Hosted, ...] = ("gitlab", "github")
    said = [await _registered(settings, kind, public) for kind in kinds if configured(settings, kind)]
    missing = [text.split()[0] for registered, text in said if registered is False]
    if missing:
        verb = "does" if len(missing) == 1 else "do"
        return Line("signing", "FAIL", f"commits are signed by {fingerprint}, which {' and '.join(missing)} {verb} "
                    f"not hold as a signing key of the bot account: register its public key there: {shown}")
    told = "".join(f"; {text}" for _, text in said)
    advice = "" if said and all(registered for registered, _ in said) else \
        f"; register its public key on the bot account as a signing key: {shown}"
    return Line("signing", "ok", f"commits are signed by {fingerprint} as {_signer(settings)}{told}{advice}")


def _signer(settings: Settings) -> str:
    """The committer email a signature goes with (GitLab verifies it against the key's user's emails)."""
    if settings.workspace.author_email:
        return settings.workspace.author_email
    placeholder = DEFAULT_AUTHOR[1]
    if not configured(settings, "gitlab"):
        return placeholder
    return "the GitLab bot account's commit email" + (f" ({placeholder} on GitHub)"
                                                      if configured(settings, "github") else "")


async def _registered(settings: Settings, kind: ForgeKind, public: str) -> tuple[bool | None, str]:
    """Whether `kind` holds the signing key on the bot account (None: it does not say, or could not be asked):
    GitLab shows an unregistered key's commits unverified, and a GitHub ruleset requiring signed commits wants
    verified signatures, so it refuses them, after a task's work."""
    from foundation.forge import ForgeError, open_forge

    if kind == "github" and settings.github.app_id is not None and settings.github.private_key is not None:
        return None, "a GitHub App's pushed commits verify as nobody's (docs/github.md)"
    try:
        held = await open_forge(settings, kind).signing_keys()
    except ForgeError as exc:
        return None, f"{kind} could not be asked whether it holds the key ({type(exc).__name__})"
    if held is None:
        return None, f"{kind} does not say whether it holds the key (the token may not read signing keys)"
    body = public.split()[:2]
    if any(key.split()[:2] == body for key in held):
        return True, f"{kind} holds it as a signing key of the bot account"
    return False, f"{kind} does not hold it as a signing key of the bot account"


async def _hooks(settings: Settings) -> list[Line]:
    """Whether each allowed project's hook reaches the bot, as the forge says (what `forgebot hooks` lists): a
    hook GitLab disabled after failing deliveries, or one whose deliveries GitHub saw refused, loses every
    event before the bot sees it, so nothing else here can tell."""
    from bot.cli.hooks_cli import forges, hook_lines

    if not settings.intake.public_url:
        return [Line("hooks", "skip", "FORGEBOT_INTAKE__PUBLIC_URL not set: the hooks' URL is not known")]
    if not settings.intake.allowed_projects or not forges(settings):
        return [Line("hooks", "skip", "no allowed project on a forge with a token and a webhook secret")]
    lines, unresolved = await hook_lines(settings, settings.intake.public_url, list(settings.intake.allowed_projects),
                                         None, save=False)
    found = [Line("hooks", "FAIL", f"{line.forge} {line.path}: {line.detail}") for line in lines if line.broken]
    found += [Line("hooks", "FAIL", problem) for problem in unresolved]
    if found:
        return found
    counts: dict[str, int] = {}
    for line in lines:
        counts[line.state] = counts.get(line.state, 0) + 1
    words = {"ok": "delivering", "enabled": "enabled", "unused": "nothing delivered yet",
             "missing": "not registered (forgebot hooks --register)", "unread": "not readable by the token",
             "unknown": "not said by the forge"}
    told = ", ".join(f"{count} {words.get(state, state)}" for state, count in sorted(counts.items()))
    return [Line("hooks", "ok", f"{len(lines)} hooks: {told}")]


async def _sandbox(settings: Settings) -> Line:
    """Run `true` as a repository's check would run (the server's sandbox settings) and say what held.

    A sandbox that refuses every check (a root worker not accepted, no namespaces and running without
    them not accepted) fails the line: no implementation on this server would have its tests run.
    """
    import os
    import tempfile
    from pathlib import Path

    from project.checks import sandbox_policy
    from project.repoconfig import RepoConfig
    from project.sandbox import ROOT_SETTING, UNISOLATED_SETTING, open_sandbox, probe_isolation

    def probe() -> tuple[str, str]:
        policy = sandbox_policy(settings, RepoConfig()).model_copy(update={"timeout_seconds": 30})
        isolation = probe_isolation()
        spaces = "namespaces available" if isolation.available else f"namespaces unavailable ({isolation.reason})"
        with tempfile.TemporaryDirectory(prefix="forgebot-check-") as target, \
                open_sandbox(Path(target), policy, {"PATH": "/usr/local/bin:/usr/bin:/bin"}) as box:
            result = box.run("true")
        if result.status == "refused":
            why = result.output.strip().splitlines()[0] if result.output.strip() else "refused"
            return "FAIL", f"{spaces}; checks are NOT run: {why}"
        if result.status != "passed":
            return "FAIL", f"{spaces}; a trivial check did not pass ({result.status}): {result.output.strip()[-200:]}"
        parts = [spaces if isolation.available else f"{spaces}, checks run without them ({UNISOLATED_SETTING})"]
        if os.geteuid() == 0:
            parts.append(f"the worker runs as root, checks allowed ({ROOT_SETTING})")
        for key, label in (("memory_limit", "memory limit"), ("pid_limit", "process limit")):
            if key in result.enforced:
                parts.append(f"{label} enforced")
            else:
                why = result.not_enforced.get(key, "not applied").split(":")[0]
                parts.append(f"{label} NOT enforced ({why})")
        return "ok", "; ".join(parts)

    status, detail = await asyncio.to_thread(probe)
    return Line("sandbox", "ok" if status == "ok" else "FAIL", detail)
