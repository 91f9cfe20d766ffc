"""`forgebot hooks`: each allowed project's webhook URL and its own secret; `--register` saves them.

Every project gets a different secret, derived from the master webhook secret and the project's
id (`bot.intake.webhooks.project_secret`), so a maintainer who configures one project's hook learns
nothing that authenticates a delivery for another. The projects are the allow-list
(`FORGEBOT_INTAKE__ALLOWED_PROJECTS`), each resolved through the forge's API: the hook is bound
to the id the forge reports, whatever name was listed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from dataclasses import asdict, dataclass

from bot.cli.check import unreachable
from bot.intake.webhooks import project_secret
from foundation.forge import ForgeAuthError, ForgeError, ForgeKind, ForgeUnavailable, ForgeUntrusted, open_forge
from foundation.settings import Settings


@dataclass(frozen=True)
class HookLine:
    forge: str
    project: str
    path: str
    url: str
    secret: str
    registered: str = ""  # "created", "updated", "refused: …" or "" (not asked to register)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("hooks", help="each allowed project's webhook URL and secret (--register: save them)")
    parser.add_argument("--forge", choices=["gitlab", "github"], help="only this forge (default: both, if configured)")
    parser.add_argument("--url", help="the receiver's public base URL (default: FORGEBOT_INTAKE__PUBLIC_URL)")
    parser.add_argument("--register", action="store_true", help="create or update each hook through the forge API")
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    parser.add_argument("projects", nargs="*", help="projects to list (default: the allow-list)")
    parser.set_defaults(handler=run)


def _forges(settings: Settings, only: str | None) -> list[ForgeKind]:
    configured: list[ForgeKind] = []
    if settings.gitlab.token is not None and settings.gitlab.webhook_secret is not None:
        configured.append("gitlab")
    if settings.github.webhook_secret is not None and (settings.github.token or settings.github.app_id):
        configured.append("github")
    return [kind for kind in configured if only in (None, kind)]


# who may manage a project's webhooks
_MANAGE = {"gitlab": "the token may not manage this project's webhooks (role Maintainer)",
           "github": "the token may not manage this repository's webhooks (admin, or the App's webhooks permission)"}


async def hook_lines(settings: Settings, base_url: str, projects: list[str], only: str | None,
                     save: bool) -> list[HookLine]:
    """Resolve each project on each configured forge; with `save`, create or update its hook."""
    lines: list[HookLine] = []
    for kind in _forges(settings, only):
        conf = settings.gitlab if kind == "gitlab" else settings.github
        assert conf.webhook_secret is not None
        master = conf.webhook_secret.get_secret_value().encode()
        forge = open_forge(settings, kind)
        for name in projects:
            if kind == "github" and "/" not in name and not name.isdigit():
                continue  # a GitLab id or path listed for both forges
            try:
                repo = await forge.resolve_repo(name)
            # "gitlab: ConnectionError" alone named neither the address nor a fix
            except (ForgeUnavailable, ForgeUntrusted) as exc:
                where = settings.gitlab.url if kind == "gitlab" else settings.github.api_url
                sys.stderr.write(f"forgebot hooks: {kind} project {name}: {unreachable(kind, str(where), exc)}\n")
                continue
            except ForgeError as exc:
                sys.stderr.write(f"forgebot hooks: {kind} project {name}: {exc}\n")
                continue
            repo_id = repo.id
            url = f"{base_url.rstrip('/')}/webhooks/{kind}/{repo_id}"
            secret = project_secret(master, kind, repo_id)
            registered = ""
            if save:
                try:
                    existing = [h for h in await forge.list_hooks(repo) if h.url == url]
                    await forge.save_hook(repo, url, secret, existing[0].id if existing else None)
                    registered = "updated" if existing else "created"
                except ForgeAuthError as exc:  # a bot token below Maintainer: the line is still what to add by hand
                    registered = f"refused: {_MANAGE[kind]} ({exc}); add the URL and secret by hand"
            lines.append(HookLine(kind, repo.project, repo.path, url, secret, registered))
    return lines


def run(args: argparse.Namespace) -> int:
    settings: Settings = args.settings
    base = args.url or settings.intake.public_url
    if not base:
        sys.stderr.write("forgebot hooks needs --url or FORGEBOT_INTAKE__PUBLIC_URL (the receiver's public address)\n")
        return 2
    projects = list(args.projects or settings.intake.allowed_projects)
    if not projects:
        sys.stderr.write("forgebot hooks: no projects (list them, or set FORGEBOT_INTAKE__ALLOWED_PROJECTS)\n")
        return 2
    if not _forges(settings, args.forge):
        sys.stderr.write("forgebot hooks: no forge has both a token and a webhook secret configured\n")
        return 2
    lines = asyncio.run(hook_lines(settings, base, projects, args.forge, args.register))
    for line in lines:
        if args.json:
            sys.stdout.write(json.dumps(asdict(line)) + "\n")
        else:
            done = f"  ({line.registered})" if line.registered else ""
            sys.stdout.write(f"{line.forge}  {line.path}\n  url:    {line.url}\n  secret: {line.secret}{done}\n")
    refused = any(line.registered.startswith("refused") for line in lines)
    return 0 if lines and not refused else 1
