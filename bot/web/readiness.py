"""What a running service still lacks, in the words `/readyz` answers with.

`serve`, `web` and `worker` start with partial configuration: a first start with nothing but a
data directory must come up and say what to set, not exit with a traceback. `gaps` lists what the
configuration alone shows to be missing (no forge, a forge without its webhook secret, no usable
model), each naming the variable to set; `forgebot check`, which goes on to ask the services
themselves, can reuse it. `readiness` adds what the running process knows: whether Redis and the
task store answer, and whether each forge has said who the bot is (`bot.intake.identity.Identities`).

The status code answers the probe's question alone — can this process take deliveries (Redis and
the store answer) — so a receiver is not taken out of its load balancer for what only the worker
needs; the body names everything else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bot.intake.identity import ForgeKind, Identities, configured, known
from foundation.settings import Settings

FORGES: tuple[ForgeKind, ...] = ("gitlab", "github")


@dataclass(frozen=True)
class Gap:
    """One missing or unusable part of the configuration."""

    part: str  # "forge", "gitlab", "github", "model"
    problem: str  # what is missing and what it costs, naming the variable to set

    def __str__(self) -> str:
        return f"{self.part}: {self.problem}"


def _forge_gaps(settings: Settings) -> list[Gap]:
    kinds = [kind for kind in FORGES if configured(settings, kind)]
    found: list[Gap] = []
    if settings.github.app_id is not None and settings.github.private_key is None:
        found.append(Gap("github", "FORGEBOT_GITHUB__APP_ID is set without FORGEBOT_GITHUB__PRIVATE_KEY"))
    if not kinds:
        found.append(Gap("forge", "no forge is configured: set FORGEBOT_GITLAB__TOKEN (with FORGEBOT_GITLAB__URL for "
                                  "a self-managed GitLab) or FORGEBOT_GITHUB__TOKEN, and the forge's webhook secret"))
    for kind in FORGES:
        name = kind.upper()
        secret = (settings.gitlab if kind == "gitlab" else settings.github).webhook_secret
        if kind in kinds and secret is None:
            found.append(Gap(kind, f"FORGEBOT_{name}__WEBHOOK_SECRET is not set: every {kind} delivery is refused"))
        elif kind not in kinds and secret is not None:
            found.append(Gap(kind, f"its webhook secret is set but not FORGEBOT_{name}__TOKEN: deliveries are "
                                   "accepted, and their tasks fail without a token"))
    return found


def _model_gap(settings: Settings) -> list[Gap]:
    from foundation.llm import ModelConfigError, check_config

    try:
        check_config(settings.llm)
    except ModelConfigError as exc:
        return [Gap("model", f"{exc}; tasks fail until it is set")]
    return []


def gaps(settings: Settings) -> list[Gap]:
    """What the configuration is missing, without asking any service (no network)."""
    return [*_forge_gaps(settings), *_model_gap(settings)]


def identities(settings: Settings, learning: Identities | None) -> tuple[dict[str, str | None], list[Gap]]:
    """Each configured forge's bot identity (None while unknown) and a gap for each one unknown."""
    shown: dict[str, str | None] = {}
    found: list[Gap] = []
    for kind in FORGES:
        if not configured(settings, kind):
            continue
        if known(settings, kind):
            shown[kind] = f"id {settings.gitlab.bot_user_id}" if kind == "gitlab" else settings.github.bot_login
            if learning and (short := learning.cannot_write.get(kind)):
                found.append(Gap(kind, f"{short} (FORGEBOT_{kind.upper()}__TOKEN): tasks fail at their first "
                                       "comment"))
            continue
        shown[kind] = None
        why = (learning.problems.get(kind) if learning else None) or "not asked yet"
        found.append(Gap(kind, f"the forge has not said who the bot is ({why}); it is asked again in the "
                               "background, and tasks wait in the queue until it answers"))
    return shown, found


def readiness(settings: Settings, static: list[Gap], learning: Identities | None, redis_ok: bool,
              store_ok: bool) -> tuple[int, dict[str, Any]]:
    """The `/readyz` answer: 200 when deliveries can be taken (Redis and store answer), else 503."""
    shown, unknown = identities(settings, learning)
    missing = [str(gap) for gap in [*static, *unknown]]
    if not redis_ok:
        missing.insert(0, "redis: does not answer (FORGEBOT_REDIS_URL); deliveries wait for the sweeper")
    if not store_ok:
        missing.insert(0, "store: the task store does not answer (FORGEBOT_DATABASE_URL or the data directory)")
    body = {"redis": redis_ok, "store": store_ok, "bot": shown, "missing": missing}
    return (200 if redis_ok and store_ok else 503), body
