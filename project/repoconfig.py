"""`.forgebot.yml`: the per-repository configuration, read from the default branch only.

The file is read with `git show <default branch>:.forgebot.yml`, never from the working tree or the
change's branch: a change under review must not be able to switch off its own checks. An invalid
file raises `RepoConfigError`, whose message names the field and is posted as the task's comment;
the task stops rather than guessing.
"""

from __future__ import annotations

import fnmatch
import re
import string
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from foundation.gitrunner import Repo, run
from project.profiles import CommandSpec, Profile, ProfileError, load_profile, unmatched_profile
from project.profiles.detect import ProfileChoice, detect_profile

CONFIG_PATH = ".forgebot.yml"
# the names the file is read by, the first found wins: `.yaml` is YAML's other extension, and a file by
# that name was silently ignored, leaving the repository on the defaults with no word why
CONFIG_PATHS = (CONFIG_PATH, ".forgebot.yaml")
MAX_CONFIG_BYTES = 64 * 1024
MAX_VALUES = 20_000  # keys and values once aliases are followed: far above any real file
MAX_LISTED = 20  # fields an error message names; the rest are counted
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's parser when installed: ~10x faster
_REF = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$")


class RepoConfigError(ValueError):
    """`.forgebot.yml` cannot be used; `str(error)` is a Markdown message fit for a comment."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Commands(_Strict):
    """Overrides of the profile's commands: a string replaces, `false` disables, absent keeps."""

    install: str | Literal[False] | None = None
    test: str | Literal[False] | None = None
    smoke: str | Literal[False] | None = None
    lint: dict[str, str | Literal[False]] | Literal[False] | None = Field(
        default=None, description="by lint name: a command replaces or adds, false drops one"
    )
    install_network: bool = Field(
        default=False,
        description="the install command may download (HTTPS to public addresses through the bot's proxy), "
        "where the server allows it",
    )
    timeout_seconds: int = Field(default=600, gt=0, le=7200)
    memory_mb: int = Field(default=2048, ge=64, le=65536)

    @field_validator("install", "test", "smoke")
    @classmethod
    def _not_blank(cls, value: str | Literal[False] | None) -> str | Literal[False] | None:
        if isinstance(value, str) and not value.strip():
            raise ValueError("an empty command; use false to disable it")
        return value


class Labels(_Strict):
    """Issue labels that trigger the bot in this repository (None: the server's setting)."""

    implement: str | None = Field(default=None, min_length=1, max_length=255)
    analyze: str | None = Field(default=None, min_length=1, max_length=255)


class Budgets(_Strict):
    """Limits on one task in this repository (None: the server's default)."""

    max_tokens: int | None = Field(default=None, gt=0)
    max_cost_usd: float | None = Field(default=None, gt=0)
    max_minutes: int | None = Field(default=None, gt=0, le=24 * 60)
    max_review_rounds: int | None = Field(default=None, ge=0, le=20)


class Review(_Strict):
    """Review noise control for this repository (None: the server's setting)."""

    severity_threshold: Literal["blocker", "major", "minor", "info"] | None = None
    max_findings: int | None = Field(default=None, ge=1, le=100)
    max_file_lines: int | None = Field(default=None, ge=10)


class RepoConfig(_Strict):
    """The validated content of `.forgebot.yml`; an absent file gives these defaults."""

    profile: str | None = Field(
        default=None, description="absent: detected from the repository's files (docs/profiles.md)"
    )
    commands: Commands = Field(default_factory=Commands)
    labels: Labels = Field(default_factory=Labels)
    budgets: Budgets = Field(default_factory=Budgets)
    review: Review = Field(default_factory=Review)
    protected_paths: tuple[str, ...] = Field(
        default=(), description="fnmatch patterns the coder may not edit; `*` crosses directories"
    )
    allow_protected: tuple[str, ...] = Field(
        default=(), description="patterns of normally protected paths (CI config, hooks) the coder may edit"
    )
    database: str | None = Field(
        default=None, pattern=r"^[A-Za-z0-9_.-]{1,64}$",
        description="name of a connection the server binds to this project, never its URL",
    )
    commit_message: str = Field(
        default="{title}", min_length=1, max_length=200,
        description="the first line of each commit the bot makes: `{title}` (what the commit does) and "
        "`{issue}` (the issue's number), e.g. `feat: {title} (#{issue})` for a commit-message rule",
    )

    @field_validator("protected_paths", "allow_protected")
    @classmethod
    def _relative_patterns(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for pattern in value:
            if not pattern or pattern.startswith("/") or ".." in pattern.split("/"):
                raise ValueError(f"{pattern!r} must be a relative path pattern")
        return value

    @field_validator("commit_message")
    @classmethod
    def _one_line_template(cls, value: str) -> str:
        """One line holding `{title}`, and no placeholder but `{title}` and `{issue}` (no format spec,
        no attribute: the text is the repository's, and `str.format` would read what it names)."""
        if "\n" in value or "\r" in value:
            raise ValueError("must be one line: it is the commit's first line")
        try:
            fields = [(name, spec, conversion) for _, name, spec, conversion in string.Formatter().parse(value)
                      if name is not None]
        except ValueError as exc:
            raise ValueError(f"is not a template ({exc}); write a literal brace as {{{{ or }}}}") from None
        unknown = sorted({"{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
                          for name, spec, conversion in fields if name not in ("title", "issue") or spec or conversion})
        if unknown:
            raise ValueError(f"knows only {{title}} and {{issue}}, not {', '.join(unknown)}")
        if "title" not in {name for name, _, _ in fields}:
            raise ValueError("must hold {title}, what the commit does")
        return value

    def commit_subject(self, title: str, issue: int) -> str:
        """The first line of a commit that does `title`, for issue `issue`."""
        return self.commit_message.format(title=title, issue=issue)

    def is_protected(self, path: str) -> bool:
        """Whether a repository-relative path matches a protected pattern (`dir/` covers its tree)."""
        clean = path.removeprefix("./")
        for pattern in self.protected_paths:
            if pattern.endswith("/") and clean.startswith(pattern):
                return True
            if fnmatch.fnmatchcase(clean, pattern):
                return True
        return False

    _detected: ProfileChoice | None = PrivateAttr(default=None)

    def with_detection(self, choice: ProfileChoice) -> RepoConfig:
        """This configuration carrying the profile detected from the repository (used when none is named)."""
        copy = self.model_copy()
        copy._detected = choice
        return copy

    def profile_choice(self) -> ProfileChoice:
        """The profile this repository gets and why: the one named here, else the detected one."""
        if self.profile:
            return ProfileChoice(self.profile, f"named in `{CONFIG_PATH}`", detected=False)
        if self._detected is not None:
            return self._detected
        return ProfileChoice(None, "no checkout of the repository to detect it from", detected=True)

    def resolve_profile(self) -> Profile:
        """The chosen profile with `commands` applied; the empty stand-in when nothing matched."""
        name = self.profile_choice().name
        return apply_overrides(load_profile(name) if name else unmatched_profile(), self.commands)


def apply_overrides(profile: Profile, commands: Commands) -> Profile:
    """Return `profile` with the repository's command overrides applied."""
    update: dict[str, object] = {}
    for key in ("install", "test", "smoke"):
        value = getattr(commands, key)
        if value is False:
            update[key] = None
        elif isinstance(value, str):
            update[key] = CommandSpec(name=key, run=value, network=key == "install")
    if commands.lint is False:
        update["lint"] = ()
    elif commands.lint:
        kept = [spec for spec in profile.lint if spec.name not in commands.lint]
        added = [CommandSpec(name=n, run=r) for n, r in commands.lint.items() if isinstance(r, str)]
        update["lint"] = (*kept, *added)
    return profile.model_copy(update=update)


def parse_repo_config(text: str, source: str = CONFIG_PATH) -> RepoConfig:
    """Validate the text of a `.forgebot.yml`; `source` names it in error messages.

    The text is anyone's with push access, so the work is bounded by its size: at most
    `MAX_CONFIG_BYTES`, at most `MAX_VALUES` values once YAML aliases are followed (an alias shares
    a value, and a few lines of nested aliases name billions), and an error message of at most
    `MAX_LISTED` fields, built in one pass.
    """
    if len(text.encode("utf-8", errors="replace")) > MAX_CONFIG_BYTES:
        raise RepoConfigError(f"`{source}` is larger than {MAX_CONFIG_BYTES} bytes")
    try:
        data = yaml.load(text, Loader=_Loader)  # a safe loader (libyaml's when present)
    except yaml.YAMLError as exc:
        raise RepoConfigError(f"`{source}` is not valid YAML: {str(exc)[:500]}") from exc
    except RecursionError as exc:
        raise RepoConfigError(f"`{source}` is nested too deeply") from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise RepoConfigError(f"`{source}` must be a mapping of settings, not {type(data).__name__}")
    if _values(data, MAX_VALUES) > MAX_VALUES:
        raise RepoConfigError(f"`{source}` holds more than {MAX_VALUES} values (YAML aliases count each use)")
    try:
        config = RepoConfig.model_validate(data)
    except ValidationError as exc:
        raise RepoConfigError(_describe(exc, source)) from exc
    try:
        if config.profile:
            load_profile(config.profile)
    except ProfileError as exc:
        raise RepoConfigError(f"`{source}` is invalid:\n- `profile`: {exc}") from exc
    return config


def _values(data: object, budget: int) -> int:
    """How many values `data` holds, counting a shared (aliased) one at each use; stops past `budget`."""
    seen, stack = 0, [data]
    while stack and seen <= budget:
        item = stack.pop()
        seen += 1
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return seen


def load_repo_config(repo_dir: Path, default_branch: str) -> RepoConfig:
    """Read `.forgebot.yml` from `default_branch` of the repository at `repo_dir`.

    The working tree and any other branch are ignored. A missing file gives the defaults; a missing
    branch or an invalid file raises RepoConfigError. Without a `profile:` the configuration carries
    the profile detected from the files of that same revision (`project.profiles.detect`).
    """
    config = _read_repo_config(repo_dir, default_branch)
    return config if config.profile else config.with_detection(detect_profile(repo_dir, default_branch))


def defaults_at(repo_dir: Path, revision: str) -> RepoConfig:
    """The defaults, with the profile detected at `revision`: for a caller that goes on without the file."""
    return RepoConfig().with_detection(detect_profile(repo_dir, revision))


def _read_repo_config(repo_dir: Path, default_branch: str) -> RepoConfig:
    if not _REF.match(default_branch) or ".." in default_branch:
        raise RepoConfigError(f"invalid default branch name {default_branch!r}")
    if _git(repo_dir, "rev-parse", "--verify", "--quiet", f"{default_branch}^{{commit}}") is None:
        raise RepoConfigError(f"default branch `{default_branch}` not found in the repository")
    for name in CONFIG_PATHS:
        listing = _git(repo_dir, "ls-tree", "-l", default_branch, "--", name)
        if listing:
            break
    else:
        return RepoConfig()
    fields = listing.split()
    if fields[1] != "blob":
        raise RepoConfigError(f"`{name}` on `{default_branch}` is not a file")
    if int(fields[3]) > MAX_CONFIG_BYTES:
        raise RepoConfigError(f"`{name}` is larger than {MAX_CONFIG_BYTES} bytes")
    text = _git(repo_dir, "show", f"{default_branch}:{name}")
    if text is None:
        raise RepoConfigError(f"`{name}` on `{default_branch}` could not be read")
    return parse_repo_config(text, f"{name}` on `{default_branch}")


def _git(repo_dir: Path, *args: str) -> str | None:
    done = run(args, Repo.at(repo_dir), timeout=30)
    return done.stdout if done.returncode == 0 else None


def _describe(exc: ValidationError, source: str) -> str:
    """One line per field, with union-member tags dropped and the most specific field kept.

    Linear in the number of errors and capped: a file of thousands of invalid entries (each a
    union's several errors) gets `MAX_LISTED` lines and a count of the rest, each input cut short.
    """
    messages: dict[str, list[str]] = {}
    inputs: dict[str, str] = {}
    for error in exc.errors(include_url=False, include_context=False):
        parts = [str(p) for p in error["loc"] if not (isinstance(p, str) and _is_type_tag(p))]
        field = ".".join(parts) or "(top level)"
        message = "unknown field" if error["type"] == "extra_forbidden" else error["msg"]
        if isinstance(error.get("input"), str | int | float | bool) and error["type"] != "extra_forbidden":
            inputs[field] = f" (got {_short(repr(error['input']))})"
        texts = messages.setdefault(field, [])
        if message not in texts:
            texts.append(message)
    # a field with errors inside it is described by those: every proper prefix of a field, once
    containers = {".".join(field.split(".")[:n]) for field in messages for n in range(1, field.count(".") + 1)}
    fields = [field for field in messages if field not in containers]
    lines = [f"`{source}` is invalid:"]
    for field in fields[:MAX_LISTED]:
        lines.append(f"- `{_short(field)}`: {' or '.join(messages[field])}{inputs.get(field, '')}")
    if len(fields) > MAX_LISTED:
        lines.append(f"- … and {len(fields) - MAX_LISTED} more invalid fields")
    return "\n".join(lines)


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _is_type_tag(part: str) -> bool:
    # pydantic names the member of a union it tried: `str`, `literal[False]`, `dict[str,...]`.
    return part in {"str", "int", "float", "bool"} or "[" in part
