"""`forgebot hooks`: each allowed project's webhook URL, its own secret and what the forge says of the
hook's deliveries; `--register` saves them, `--redeliver` has the forge send failed deliveries again.

Every project gets a different secret, derived from the master webhook secret and the project's
id (`bot.intake.webhooks.project_secret`), so a maintainer who configures one project's hook learns
nothing that authenticates a delivery for another. The projects are the allow-list
(`FORGEBOT_INTAKE__ALLOWED_PROJECTS`), each resolved through the forge's API: the hook is bound
to the id the forge reports, whatever name was listed.

Why the state: a delivery the receiver refuses or never gets is lost before the bot sees anything,
so only the forge can tell. GitLab disables a hook after 4 failing deliveries in a row (a test
answered 2xx enables it again, which `--register` sends); GitHub keeps each hook's last answer;
neither sends a failed delivery again by itself (`--redeliver` asks). A GitHub App's own webhook
gets a line of its own, read as the App.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from dataclasses import asdict, dataclass

from bot.cli.check import unreachable
from bot.intake.webhooks import project_secret
from foundation.forge import (
    Forge,
    ForgeAuthError,
    ForgeConflict,
    ForgeError,
    ForgeKind,
    ForgeNotFound,
    ForgeUnavailable,
    ForgeUntrusted,
    Hook,
    RepoRef,
    open_forge,
)
from foundation.settings import Settings


@dataclass(frozen=True)
class HookLine:
    forge: str
    project: str
    path: str
    url: str
    secret: str
    registered: str = ""  # "created", "updated", "refused: …" or "" (not asked to register)
    # what the forge says of the hook at `url`: a `Hook.state`, "missing" (none there), "unread" (the token
    # may not read the project's hooks) or "elsewhere" (the App's webhook points at another address);
    # `detail` in the forge's words and what to do
    state: str = ""
    detail: str = ""
    redelivered: str = ""  # what `--redeliver` did ("" not asked)
    redelivery_failed: bool = False  # deliveries are still unanswered after it

    @property
    def broken(self) -> bool:
        """Whether the forge does not deliver to the bot through this hook (disabled), or its last delivery
        failed and nothing here changed the hook since."""
        acted = self.registered == "updated" or bool(self.redelivered and not self.redelivery_failed)
        return self.state in ("disabled", "elsewhere") or (self.state == "failing" and not acted) or \
            self.redelivery_failed


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("hooks", help="each allowed project's webhook URL and secret (--register: save them)")
    parser.add_argument("--forge", choices=["gitlab", "github"], help="only this forge (default: both, if configured)")
    parser.add_argument("--url", help="the receiver's public base URL (default: FORGEBOT_INTAKE__PUBLIC_URL)")
    parser.add_argument("--register", action="store_true", help="create or update each hook through the forge API")
    parser.add_argument("--redeliver", action="store_true",
                        help="have the forge send again each delivery it keeps that was not answered 2xx (the events "
                             "of an outage of the receiver)")
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    parser.add_argument("projects", nargs="*", help="projects to list (default: the allow-list)")
    parser.set_defaults(handler=run)


def forges(settings: Settings, only: str | None = None) -> list[ForgeKind]:
    """The forges whose hooks can be told: a token and a webhook secret configured."""
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
                     save: bool, redeliver: bool = False) -> tuple[list[HookLine], list[str]]:
    """Resolve each project on each configured forge and read what the forge says of its hook; with `save`,
    create or update it; with `redeliver`, have the forge send its failed deliveries again. The lines, and a
    sentence for each project that could not be resolved."""
    lines: list[HookLine] = []
    unresolved: list[str] = []
    for kind in forges(settings, only):
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
                unresolved.append(f"{kind} project {name}: {unreachable(kind, str(where), exc)}")
                continue
            except ForgeError as exc:
                unresolved.append(f"{kind} project {name}: {exc}")
                continue
            secret = project_secret(master, kind, repo.id)
            lines.append(await _project_line(settings, forge, kind, repo, base_url, secret, save, redeliver))
        if kind == "github" and settings.github.app_id is not None:
            lines.append(await _app_line(forge, base_url, redeliver))
    return lines, unresolved


async def _project_line(settings: Settings, forge: Forge, kind: ForgeKind, repo: RepoRef, base_url: str,
                        secret: str, save: bool, redeliver: bool) -> HookLine:
    """One project's hook: read, with `save` created or updated (a disabled GitLab hook tested), with
    `redeliver` its failed deliveries sent again."""
    url = f"{base_url.rstrip('/')}/webhooks/{kind}/{repo.id}"
    unread = refused = ""
    try:
        hooks: list[Hook] | None = await forge.list_hooks(repo)
    except (ForgeAuthError, ForgeNotFound) as exc:  # GitHub answers 404 to a token that is not an admin
        hooks, unread = None, _MANAGE[kind].replace("may not manage", "may not read")
        refused = f"{_MANAGE[kind]} ({exc})"
    except ForgeError as exc:
        hooks, unread = None, f"{kind} did not list them ({exc})"
        refused = unread
    found = next((h for h in hooks or [] if h.url == url), None)
    if found is not None:
        try:
            found = await forge.last_answer(repo, found)
        except ForgeError:  # the hook's state stays what the hook says
            pass
    was = found.state if found is not None else ""
    registered = untested = ""
    if save and hooks is None:
        registered = f"refused: {refused}; add the URL and secret by hand"
    elif save:
        try:
            saved = await forge.save_hook(repo, url, secret, found.id if found else None)
            registered = "updated" if found else "created"
        except ForgeAuthError as exc:
            registered = f"refused: {_MANAGE[kind]} ({exc}); add the URL and secret by hand"
        except ForgeConflict as exc:  # a 422: the forge would not take this URL
            registered = f"refused: {_refused_url(kind, exc)}"
        if found is not None and was == "disabled" and registered == "updated":  # GitLab's way back: a test
            try:
                found = await forge.test_hook(repo, saved.id) or found
            except ForgeError as exc:  # a GitLab before 16.11 has no test API (404)
                untested = (f"GitLab sent no test ({exc}): send one from the hook's settings (Edit → Test → Push "
                            "events), which enables it when answered 2xx")
    state, detail = _state(settings, kind, hooks, found, registered, was) if hooks is not None \
        else ("unread", f"not read: {unread}")
    if untested:
        detail = f"{found.detail if found else detail}; {untested}"
    redelivered, still = await _redelivered(forge, kind, repo, found) if redeliver else ("", False)
    return HookLine(kind, repo.project, repo.path, url, secret, registered, state, detail, redelivered, still)


async def _app_line(forge: Forge, base_url: str, redeliver: bool) -> HookLine:
    """The GitHub App's own webhook, which delivers every installation's events to `/webhooks/github` with
    the App's secret (`FORGEBOT_GITHUB__WEBHOOK_SECRET`, never printed): where it points and how its last
    delivery went, as the App may ask (its JWT)."""
    url = f"{base_url.rstrip('/')}/webhooks/github"
    secret = "FORGEBOT_GITHUB__WEBHOOK_SECRET (the App's webhook secret)"
    try:
        found = await forge.app_hook()
    except ForgeError as exc:
        return HookLine("github", "app", "the GitHub App", url, secret, state="unread",
                        detail=f"not read: GitHub did not show the App's webhook ({exc})")
    if found is None:
        return HookLine("github", "app", "the GitHub App", url, secret, state="unread",
                        detail="not read: the credentials are not the App's")
    if found.url != url:
        return HookLine("github", "app", "the GitHub App", url, secret, state="elsewhere",
                        detail=f"the App's webhook points at {found.url or 'nothing'}, not here: set its URL in the "
                               "App's settings (General → Webhook)")
    state, detail = _state_of(found, "GitHub", saved=False)
    redelivered, still = await _redelivered(forge, "github", None, found) if redeliver else ("", False)
    return HookLine("github", "app", "the GitHub App", url, secret, "", state, detail, redelivered, still)


async def _redelivered(forge: Forge, kind: ForgeKind, repo: RepoRef | None, found: Hook | None) -> tuple[str, bool]:
    """What `--redeliver` did for the hook at the bot's URL, and whether deliveries are still unanswered."""
    if found is None:
        return "nothing to send again: no hook at this URL", False
    if found.state == "disabled":
        return "nothing sent again: the hook is disabled (--register first)", True
    try:
        done = await forge.redeliver(repo, found.id)
    except ForgeNotFound:  # a GitLab before 17.3 lists no hook events
        if kind == "gitlab":
            return ("nothing sent again: GitLab lists no hook events before 17.3 (resend them from the hook's "
                    "Recent events, in its settings)"), True
        return "nothing sent again: GitHub lists no deliveries of the hook", True
    except ForgeError as exc:
        return f"nothing sent again: {exc}", True
    name, kept = ("GitLab", "7 days") if kind == "gitlab" else ("GitHub", "3 days")
    if not done.unanswered:
        return f"nothing to send again: {name} answered 2xx every delivery it keeps ({kept})", False
    said = f"{done.resent} of {done.unanswered} deliveries no attempt of which was answered 2xx sent again"
    if done.answered is not None:
        said += f", {done.answered} answered 2xx now"
    else:
        said += f"; {name} sends them shortly, and forgebot hooks --redeliver then finds none left"
    if done.refused:
        said += f"; {name} refused the rest: {done.refused} (run it again later)"
    still = bool(done.refused) or (done.answered is not None and done.answered < done.resent)
    return said, still


# where a forge delivers to no address on a local network (GitLab's administrators may allow it)
_LOCAL = {
    "gitlab": "an administrator of GitLab allows it: Admin area → Settings → Network → Outbound requests → \"Allow "
              "requests to the local network from webhooks and integrations\", or the receiver's host in the "
              "allowlist there",
    "github": "GitHub.com delivers only to a public address: give the receiver one (FORGEBOT_INTAKE__PUBLIC_URL), or "
              "relay the deliveries to it",
}


def _refused_url(kind: ForgeKind, exc: ForgeError) -> str:
    """The forge's refusal of the hook's URL in its own words, and the way out where it is known."""
    said = str(exc).split(": ", 1)[-1] if str(exc).startswith(f"{kind} ") else str(exc)
    local = "local network" in said or "reachable over the public Internet" in said
    name = "GitLab" if kind == "gitlab" else "GitHub"
    return f"{name} refused the URL: {said}" + (f"; {_LOCAL[kind]}" if local else "")


def _reach(url: str, forge: str) -> str:
    """What to look at when a delivery got no answer; an HTTPS receiver's certificate too (GitLab verifies it
    unless the hook says otherwise, GitHub always: a self-signed one fails every delivery)."""
    trusted = f", its TLS certificate trusted by {forge}" if url.startswith("https://") else ""
    return f"is the receiver up, at this URL{trusted}, and reachable from {forge}?"


def _state(settings: Settings, kind: ForgeKind, hooks: list[Hook], found: Hook | None, registered: str,
           was: str) -> tuple[str, str]:
    """The line's state and what it means for the operator (`was`: the hook's state before `registered`)."""
    saved = registered in ("created", "updated")
    if found is None:
        others = [h.url for h in hooks if "/webhooks/" in h.url]
        elsewhere = f"; another hook of the project points at {others[0]}" if others else ""
        if saved:
            return "unused", f"nothing delivered yet{elsewhere}"
        app = kind == "github" and settings.github.app_id is not None
        how = ("a GitHub App delivers through its own webhook instead (the App's settings)" if app
               else "add it with the secret above, or run forgebot hooks --register")
        return "missing", f"no hook at this URL: {how}{elsewhere}"
    if found.state == "disabled":
        if kind == "github":
            return "disabled", found.detail if saved else f"{found.detail}; forgebot hooks --register makes it active"
        fix = (f"the test delivery sent now was not answered 2xx: {_reach(found.url, 'GitLab')}" if saved else
               "GitLab sends it nothing until a test delivery is answered 2xx: forgebot hooks --register sends one")
        return "disabled", f"{found.detail}; {fix}"
    if was == "disabled" and kind == "gitlab":
        return found.state, "enabled again: GitLab's test delivery was answered 2xx"
    if was == "disabled":  # GitHub: made active again
        return "unused", "active again: the next delivery tells"
    return _state_of(found, "GitLab" if kind == "gitlab" else "GitHub", saved)


def _state_of(found: Hook, forge: str, saved: bool) -> tuple[str, str]:
    """An enabled hook's state and what it means (the App's: its secret is the App's, not one above)."""
    if found.state == "failing":
        app = found.id == 0
        if saved:
            fix = "saved again now: the next delivery tells"
        elif found.answer == 401:
            fix = ("the App's webhook secret is not FORGEBOT_GITHUB__WEBHOOK_SECRET" if app else
                   "the hook's secret is not the one above: forgebot hooks --register saves it")
        elif found.answer is None:
            fix = f"{_reach(found.url, forge)} Once it is, --redeliver sends again"
        else:
            fix = "the receiver's log says why it refused"
        return "failing", f"{found.detail}; {fix}"
    meaning = {
        "enabled": "enabled: GitLab has not disabled it (it shows no delivery's answer)",
        "ok": f"delivering: {found.detail}",
        "unused": "nothing delivered yet",
    }
    return found.state, meaning.get(found.state, "the forge does not say how its deliveries went")


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
    if not forges(settings, args.forge):
        sys.stderr.write("forgebot hooks: no forge has both a token and a webhook secret configured\n")
        return 2
    lines, unresolved = asyncio.run(hook_lines(settings, base, projects, args.forge, args.register, args.redeliver))
    for problem in unresolved:
        sys.stderr.write(f"forgebot hooks: {problem}\n")
    for line in lines:
        if args.json:
            sys.stdout.write(json.dumps(asdict(line)) + "\n")
        else:
            done = f"  ({line.registered})" if line.registered else ""
            again = f"  again:  {line.redelivered}\n" if line.redelivered else ""
            sys.stdout.write(f"{line.forge}  {line.path}\n  url:    {line.url}\n  secret: {line.secret}{done}\n"
                             f"  state:  {line.detail}\n{again}")
    refused = any(line.registered.startswith("refused") or line.broken for line in lines)
    return 0 if lines and not refused else 1
