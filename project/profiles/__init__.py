"""Target-repository profiles: a language's check commands, lint discovery and classifier as data.

A profile is a TOML file shipped in this package (`php.toml`, `python.toml`) plus
`standards/<language>.md`. Adding a language adds those two files; nothing here names a language.
"""

from __future__ import annotations

import re
import tomllib
from importlib import resources
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")

ClassifierName = Literal["phpunit", "pytest", "node"]


class ProfileError(ValueError):
    """A profile name that does not exist, or a profile file that does not validate."""


class CommandSpec(BaseModel):
    """One check command: a shell command line run in the worktree inside the sandbox.

    Placeholders: `{tool}` is the first of `tools` that exists (a path with a slash is looked up in
    the worktree, a bare name on PATH); `{files}` is the changed files matching the profile's
    `file_globs`, shell-quoted; `{file}` is one of them when `per_file` is set.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=64)
    run: str = Field(min_length=1)
    tools: tuple[str, ...] = ()
    when_files: tuple[str, ...] = Field(
        default=(), description="run only when one of these files exists in the worktree"
    )
    per_file: bool = False
    network: bool = Field(default=False, description="installers download; checks never need to")
    secret_env: tuple[str, ...] = Field(
        default=(), description="the operator's install secrets (FORGEBOT_SANDBOX__INSTALL_SECRETS) it gets by "
        "name: only for an install that runs none of the repository's code (a `.forgebot.yml` command never "
        "has any: the repository writes only its `run`)",
    )
    timeout_seconds: int | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _placeholders_match(self) -> CommandSpec:
        if "{tool}" in self.run and not self.tools:
            raise ValueError(f"command {self.name!r} uses {{tool}} but lists no tools")
        if self.per_file != ("{file}" in self.run):
            raise ValueError(f"command {self.name!r}: `per_file` and a {{file}} placeholder go together")
        if "{file}" in self.run and "{files}" in self.run:
            raise ValueError(f"command {self.name!r} uses both {{file}} and {{files}}")
        return self

    @property
    def takes_files(self) -> bool:
        """Whether the command runs on changed files (and is skipped when there are none)."""
        return self.per_file or "{files}" in self.run


class DetectRules(BaseModel):
    """How a repository without a `profile:` is recognised as this profile (`project.profiles.detect`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    manifests: tuple[str, ...] = Field(default=(), description="top-level files that claim the repository")
    sources: tuple[str, ...] = Field(default=(), description="the language's own source files; empty: file_globs")
    ignore: tuple[str, ...] = Field(
        default=(), description="files matching `sources` that are not the language's own (declaration files)"
    )
    confirm_files: tuple[str, ...] = Field(default=(), description="top-level files that confirm a claim")
    confirm_dependencies: tuple[str, ...] = Field(
        default=(), description="packages whose presence in the JSON manifest's dependencies confirms a claim"
    )
    confirm_sources: bool = Field(default=False, description="one file of `sources` confirms a claim")


class Profile(BaseModel):
    """A target stack: how to install, test, smoke-test and lint a repository, and how to read failures."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    language: str
    standards: str = Field(description="name of the `standards/<name>.md` document")
    parser: str | None = Field(
        default=None, description="code-graph grammar; None means the index degrades to text search"
    )
    classifier: ClassifierName | None = None
    file_globs: tuple[str, ...] = Field(min_length=1)
    env: dict[str, str] = Field(default_factory=dict, description="extra variables for every check")
    install: CommandSpec | None = None
    test: CommandSpec | None = None
    smoke: CommandSpec | None = None
    lint: tuple[CommandSpec, ...] = ()
    detect: DetectRules = Field(default_factory=DetectRules)

    @model_validator(mode="before")
    @classmethod
    def _name_single_commands(cls, data: object) -> object:
        # In the TOML file `[install]` needs no `name = "install"`; the table name is the name.
        if isinstance(data, dict):
            for key in ("install", "test", "smoke"):
                spec = data.get(key)
                if isinstance(spec, dict) and "name" not in spec:
                    data = {**data, key: {"name": key, **spec}}
        return data

    @property
    def search_only(self) -> bool:
        """True when no grammar exists for the language: the code graph is text search only."""
        return self.parser is None


# The stand-in for a repository no profile matched: no command, no standards, no grammar.
NO_PROFILE = "none"


def unmatched_profile() -> Profile:
    """What a repository no profile matches runs with: nothing, so its checks report `not_run`."""
    return Profile(name=NO_PROFILE, language="unknown", standards="", file_globs=("*",))


def available_profiles() -> list[str]:
    """Names of the profiles shipped in this package."""
    root = resources.files(__name__)
    return sorted(p.name.removesuffix(".toml") for p in root.iterdir() if p.name.endswith(".toml"))


def load_profile(name: str) -> Profile:
    """Load the profile `name` from its TOML file; raises ProfileError naming what is wrong."""
    if not _NAME.match(name):
        raise ProfileError(f"invalid profile name {name!r}")
    resource = resources.files(__name__).joinpath(f"{name}.toml")
    if not resource.is_file():
        known = ", ".join(available_profiles())
        raise ProfileError(f"unknown profile {name!r} (known: {known})")
    try:
        data = tomllib.loads(resource.read_text(encoding="utf-8"))
        profile = Profile.model_validate(data)
    except (tomllib.TOMLDecodeError, ValidationError) as exc:
        raise ProfileError(f"profile file {name}.toml is invalid: {exc}") from exc
    if profile.name != name:
        raise ProfileError(f"profile file {name}.toml declares name {profile.name!r}")
    return profile


__all__ = [
    "ClassifierName",
    "CommandSpec",
    "DetectRules",
    "NO_PROFILE",
    "Profile",
    "ProfileError",
    "available_profiles",
    "load_profile",
    "unmatched_profile",
]
