"""Checks: a profile's install, test, smoke and lint commands run in the sandbox on one worktree.

Each check ends in exactly one of four statuses, never blurred: `passed` and `failed` (the command
ran), `disabled` (configuration turned it off) and `not_run` (it could not or need not run: no
composer.json, no runner found, no changed files, install failed first, or the sandbox could not
isolate it and running unisolated is not accepted), always with a reason.

One run of checks shares one sandbox (`project.sandbox.open_sandbox`): what install writes (a
`vendor/` directory, a user site in HOME) serves the tests and lints that follow, on the run's
bounded layer, and is discarded with it; the worktree itself is never written. `sandbox_policy`
turns the settings into the sandbox's limits: the data directory, every secrets directory, host
sockets (/run) and the Redis socket hidden, and network only for the install command, when the
repository asks for it (`commands.install_network`) and `sandbox.install_network` allows it.
"""

from __future__ import annotations

import fnmatch
import os
import shlex
import shutil
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, SecretStr

from foundation.settings import Settings
from project.classify import Classification, classify
from project.profiles import CommandSpec, Profile
from project.repoconfig import RepoConfig
from project.sandbox import Sandbox, SandboxPolicy, SandboxResult, open_sandbox

CheckKind = Literal["install", "test", "smoke", "lint"]
CheckStatus = Literal["passed", "failed", "disabled", "not_run"]
ALL_KINDS: tuple[CheckKind, ...] = ("install", "test", "smoke", "lint")
_OUTPUT_LIMIT = 16 * 1024
# Where containers usually mount secrets: the chart's Secret, Docker and Kubernetes service accounts.
DEFAULT_SECRET_DIRS = (Path("/etc/forgebot/secrets"), Path("/run/secrets"), Path("/var/run/secrets"))
# Host sockets live here (databases, Docker, D-Bus): a network namespace does not cover a socket file.
HOST_SOCKET_DIRS = (Path("/run"), Path("/var/run"))


class CheckResult(BaseModel):
    """One check's status with the reason, the command(s) run and, for tests, the classification."""

    name: str
    kind: CheckKind
    status: CheckStatus
    reason: str = ""
    command: str | None = None
    files: tuple[str, ...] = ()
    output: str = ""
    runs: tuple[SandboxResult, ...] = ()
    classification: Classification | None = None

    @property
    def not_enforced(self) -> dict[str, str]:
        """Protections missing from any of its runs (for a check not run: those that would have been)."""
        missing: dict[str, str] = {}
        for run in self.runs:
            for name, why in run.not_enforced.items():
                missing.setdefault(name, why)
        return missing


class CheckReport(BaseModel):
    """Every check of one run, in the order they ran."""

    profile: str
    results: tuple[CheckResult, ...]


class CheckContext(BaseModel):
    """What every check of one run shares: where, which files, under which limits."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    worktree: Path
    profile: Profile
    changed_files: tuple[str, ...] = ()
    policy: SandboxPolicy = SandboxPolicy()
    base_env: dict[str, str] = {}
    install_network: bool = False
    offline_hint: str = ""  # why the install has no network, for its failure reason
    install_secrets: dict[str, SecretStr] = {}  # the operator's (`FORGEBOT_SANDBOX__INSTALL_SECRETS`)
    no_profile: str = ""  # why no profile matched: a check `.forgebot.yml` does not give is `not_run` for it


def hidden_paths(settings: Settings) -> tuple[Path, ...]:
    """What no check may see: the data dir (mirrors, other worktrees, the task store, the private
    Redis), the configured and the usual secrets directories, host sockets, a Redis socket, the
    operator's extras."""
    paths = [settings.data_dir, *DEFAULT_SECRET_DIRS, *HOST_SOCKET_DIRS, *settings.sandbox.hidden_paths]
    paths += [settings.secrets_dir] if settings.secrets_dir else []
    redis = urlsplit(settings.redis_url or "")
    paths += [Path(redis.path)] if redis.scheme == "unix" and redis.path else []
    unique: dict[Path, None] = {}
    for path in paths:
        unique.setdefault(path.resolve(), None)
    return tuple(unique)


def install_proxy(settings: Settings) -> SecretStr | None:
    """The proxy an install's tunnels leave through: the setting, else the worker's own `HTTPS_PROXY`
    (the way out its model calls take too); None: direct (`direct`, or neither)."""
    chosen = settings.sandbox.install_proxy
    if chosen is None:
        found = os.environ.get("HTTPS_PROXY") or os.environ.get("https_proxy") or ""
        return SecretStr(found) if found.strip() else None
    return chosen if chosen.get_secret_value() else None  # `direct` is read as the empty value


def sandbox_policy(settings: Settings, config: RepoConfig) -> SandboxPolicy:
    """The sandbox limits for one repository's checks: its time and memory, the operator's sandbox."""
    box = settings.sandbox
    return SandboxPolicy(
        timeout_seconds=config.commands.timeout_seconds,
        memory_bytes=config.commands.memory_mb * 1024 * 1024,
        hidden_paths=hidden_paths(settings),
        allow_unisolated=box.allow_unisolated,
        allow_root=box.allow_root,
        private_hosts=box.install_private_hosts,
        upstream_proxy=install_proxy(settings),
        max_processes=box.max_processes,
        max_file_bytes=box.max_file_mb * 2**20,
        tmp_bytes=box.tmp_mb * 2**20,
        disk_bytes=box.disk_mb * 2**20,
    )


def context_for(
    worktree: Path,
    config: RepoConfig,
    changed_files: Sequence[str],
    settings: Settings,
    base_env: Mapping[str, str],
) -> CheckContext:
    """The usual context: the repository's profile and limits, the bot's data and secrets hidden."""
    asked, allowed = config.commands.install_network, settings.sandbox.install_network
    hint = ""
    if not asked:
        hint = ("it ran without network: `commands: {install_network: true}` in `.forgebot.yml` gives it HTTPS "
                "to public addresses")
    elif not allowed:
        hint = "it ran without network: this server gives no install network (`FORGEBOT_SANDBOX__INSTALL_NETWORK`)"
    choice = config.profile_choice()
    return CheckContext(
        worktree=worktree,
        profile=config.resolve_profile(),
        no_profile="" if choice.name else choice.reason,
        changed_files=tuple(changed_files),
        policy=sandbox_policy(settings, config),
        base_env=dict(base_env),
        install_network=asked and allowed,
        offline_hint=hint,
        install_secrets=dict(settings.sandbox.install_secrets),
    )


def run_checks(context: CheckContext, kinds: Iterable[CheckKind] = ALL_KINDS) -> CheckReport:
    """Run the checks of `kinds` in order, in one sandbox; tests and smoke are not run when install failed."""
    wanted = set(kinds)
    results: list[CheckResult] = []
    with open_sandbox(context.worktree, context.policy, context.base_env) as box:
        install = run_single(context, "install", box) if "install" in wanted else None
        results += [install] if install else []
        blocked = install is not None and install.status == "failed"
        for kind in ("test", "smoke"):
            if kind not in wanted:
                continue
            if blocked:
                results.append(_result(kind, kind, "not_run", "install failed"))
            else:
                results.append(run_single(context, kind, box))
        if "lint" in wanted:
            results += run_lints(context, box)
    return CheckReport(profile=context.profile.name, results=tuple(results))


def run_single(ctx: CheckContext, kind: Literal["install", "test", "smoke"], box: Sandbox) -> CheckResult:
    """Run the profile's install, test or smoke command in the run's sandbox."""
    spec: CommandSpec | None = getattr(ctx.profile, kind)
    if spec is None and ctx.no_profile:  # not switched off: there is no profile to have a command
        return _result(kind, kind, "not_run", f"no profile for this repository: {ctx.no_profile}")
    if spec is None:
        return _result(kind, kind, "disabled", f"no {kind} command configured")
    missing = _missing_files(spec, box.view())
    if missing:
        return _result(spec.name, kind, "not_run", missing)
    tool = resolve_tool(spec, box.view(), _path(ctx))
    if spec.tools and tool is None:
        return _result(spec.name, kind, "not_run", f"none of {', '.join(spec.tools)} found")
    command = _render(spec.run, tool)
    run = _sandbox(ctx, box, spec, command)
    result = _from_runs(spec.name, kind, command, [run])
    if kind == "install" and result.status == "failed" and spec.network and ctx.offline_hint:
        result = result.model_copy(update={"reason": f"{result.reason}; {ctx.offline_hint}"})
    if kind == "test" and ctx.profile.classifier and run.status in ("passed", "failed"):
        classified = classify(
            ctx.profile.classifier, run.output, run.exit_code, root=str(ctx.worktree.resolve())
        )
        result = result.model_copy(update={"classification": classified})
        if run.status == "passed" and classified.outcome == "no_tests":
            update = {"status": "not_run", "reason": "the test command ran no tests"}
            result = result.model_copy(update=update)
        elif run.status == "failed" and not run.limit_exceeded:
            result = result.model_copy(update={"reason": f"{classified.outcome}: {classified.summary}"})
    return result


def run_lints(ctx: CheckContext, box: Sandbox | None = None) -> list[CheckResult]:
    """Run every discovered linter on the changed files it applies to (in `box`, else a sandbox of their own)."""
    if box is None:
        with open_sandbox(ctx.worktree, ctx.policy, ctx.base_env) as own:
            return run_lints(ctx, own)
    if not ctx.profile.lint and ctx.no_profile:
        return [_result("lint", "lint", "not_run", f"no profile for this repository: {ctx.no_profile}")]
    if not ctx.profile.lint:
        return [_result("lint", "lint", "disabled", "no lint command configured")]
    files = matching_files(ctx.profile, ctx.worktree, ctx.changed_files)
    results = []
    for name, spec, reason in discover_lints(ctx.profile, box.view(), _path(ctx)):
        if spec is None:
            results.append(_result(name, "lint", "not_run", reason))
        elif spec.takes_files and not files:
            globs = ", ".join(ctx.profile.file_globs)
            results.append(_result(name, "lint", "not_run", f"no changed files match {globs}"))
        else:
            results.append(_lint(ctx, box, spec, files))
    return results


def discover_lints(profile: Profile, worktree: Path, path: str) -> list[tuple[str, CommandSpec | None, str]]:
    """Per lint name, the first variant whose files and tool are present, or None with the reason."""
    chosen: dict[str, tuple[CommandSpec | None, str]] = {}
    for spec in profile.lint:
        if chosen.get(spec.name, (None, ""))[0] is not None:
            continue
        missing = _missing_files(spec, worktree)
        if missing:
            chosen.setdefault(spec.name, (None, missing))
            continue
        if spec.tools and resolve_tool(spec, worktree, path) is None:
            chosen[spec.name] = (None, f"none of {', '.join(spec.tools)} found")
            continue
        chosen[spec.name] = (spec, "")
    return [(name, spec, reason) for name, (spec, reason) in chosen.items()]


def resolve_tool(spec: CommandSpec, worktree: Path, path: str) -> str | None:
    """The first of `spec.tools` that exists: paths with a slash in the worktree, names on `path`."""
    root = worktree.resolve()
    for tool in spec.tools:
        if "/" in tool:
            candidate = (root / tool).resolve()
            if candidate.is_relative_to(root) and candidate.is_file() and os.access(candidate, os.X_OK):
                return tool
        elif shutil.which(tool, path=path):
            return tool
    return None


def matching_files(profile: Profile, worktree: Path, changed_files: Sequence[str]) -> list[str]:
    """Changed files that exist in the worktree and match the profile's globs; unsafe paths refused."""
    root = worktree.resolve()
    found = []
    for name in changed_files:
        pure = PurePosixPath(name)
        if pure.is_absolute() or ".." in pure.parts:
            raise ValueError(f"changed file {name!r} is not a path inside the repository")
        target = root / pure
        if target.is_symlink() or not target.is_file():
            continue  # deleted by the change, or a link whose content lives elsewhere
        if any(fnmatch.fnmatchcase(name, glob) for glob in profile.file_globs):
            found.append(name)
    return found


def _lint(ctx: CheckContext, box: Sandbox, spec: CommandSpec, files: list[str]) -> CheckResult:
    tool = resolve_tool(spec, box.view(), _path(ctx))
    targets = files if spec.takes_files else []
    if spec.per_file:
        commands = [_render(spec.run, tool, file=f) for f in targets]
    else:
        commands = [_render(spec.run, tool, files=targets)]
    runs = [_sandbox(ctx, box, spec, command) for command in commands]
    result = _from_runs(spec.name, "lint", commands[-1], runs)
    return result.model_copy(update={"files": tuple(targets)})


def _sandbox(ctx: CheckContext, box: Sandbox, spec: CommandSpec, command: str) -> SandboxResult:
    # Only the installer downloads, and only when the repository asks and the server allows it.
    network = spec.network and ctx.install_network and spec is ctx.profile.install
    # only a command the profile wrote names secrets (`apply_overrides` makes the repository's without any)
    secrets = {name: ctx.install_secrets[name] for name in spec.secret_env if name in ctx.install_secrets}
    policy = ctx.policy.model_copy(
        update={
            "secret_env": secrets if network else {},
            "network": network,
            "timeout_seconds": spec.timeout_seconds or ctx.policy.timeout_seconds,
            "env": {**ctx.profile.env, **ctx.policy.env},
        }
    )
    return box.run(command, policy)


def _from_runs(name: str, kind: CheckKind, command: str, runs: list[SandboxResult]) -> CheckResult:
    bad = [r for r in runs if r.status != "passed"]
    output = "\n".join(r.output for r in (bad or runs))[-_OUTPUT_LIMIT:]
    refused = [r for r in bad if r.status == "refused"]
    if refused:
        return _result(name, kind, "not_run", refused[0].output, command, runs)
    exceeded = [r for r in bad if r.limit_exceeded]
    if exceeded:
        return _result(name, kind, "failed", exceeded[0].limit_exceeded, command, runs, output)
    egress = [host for r in runs for host in r.egress_refused]
    if egress and bad:
        reason = f"exit status {bad[0].exit_code}; the install proxy refused {', '.join(egress[:5])}"
        return _result(name, kind, "failed", reason, command, runs, output)
    errors = [r for r in bad if r.status == "error"]
    timeouts = [r for r in bad if r.status == "timed_out"]
    if errors and len(errors) == len(bad):
        return _result(name, kind, "not_run", f"could not run: {errors[0].output}", command, runs, output)
    if timeouts:
        reason = f"timed out after {timeouts[0].duration_seconds:.0f}s and was killed"
        return _result(name, kind, "failed", reason, command, runs, output)
    if bad:
        return _result(name, kind, "failed", f"exit status {bad[0].exit_code}", command, runs, output)
    return _result(name, kind, "passed", "", command, runs, output)


def _result(
    name: str,
    kind: CheckKind,
    status: CheckStatus,
    reason: str,
    command: str | None = None,
    runs: Sequence[SandboxResult] = (),
    output: str = "",
) -> CheckResult:
    return CheckResult(
        name=name, kind=kind, status=status, reason=reason, command=command, runs=tuple(runs), output=output
    )


def _missing_files(spec: CommandSpec, worktree: Path) -> str:
    if spec.when_files and not any((worktree / f).is_file() for f in spec.when_files):
        return f"no {' or '.join(spec.when_files)} in the repository"
    return ""


def _render(run: str, tool: str | None, file: str | None = None, files: Sequence[str] = ()) -> str:
    # str.replace, not str.format: shell command lines are full of braces.
    command = run.replace("{tool}", shlex.quote(tool) if tool else "")
    if file is not None:
        command = command.replace("{file}", shlex.quote(file))
    return command.replace("{files}", " ".join(shlex.quote(f) for f in files))


def _path(ctx: CheckContext) -> str:
    return ctx.policy.env.get("PATH") or ctx.base_env.get("PATH") or os.defpath
