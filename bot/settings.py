"""Settings: the one place the process environment is read.

Built once by the entry point (`forgebot ...`, `create_app()`, the worker's startup) and passed
down; tests construct `Settings(...)` directly with `_env_file=None, _secrets_dir=None`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, SecretStr
from pydantic_settings import (
    BaseSettings,
    NestedSecretsSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)


def _default_data_dir() -> Path:
    return Path.home() / ".local" / "share" / "forgebot"


class GitLabSettings(BaseModel):
    """A GitLab instance (gitlab.com or self-managed)."""

    url: str = "https://gitlab.com"
    token: SecretStr | None = None
    webhook_secret: SecretStr | None = None
    bot_user_id: int | None = Field(default=None, description="the bot's own user id; its events are ignored")
    timeout: float = 30.0
    max_retries: int = 3
    max_rate_limit_wait: float = Field(default=30.0, description="longer waits defer the job instead of sleeping")


class GitHubSettings(BaseModel):
    """GitHub.com or GitHub Enterprise, with a personal token or a GitHub App."""

    api_url: str = "https://api.github.com"
    token: SecretStr | None = None
    app_id: int | None = None
    private_key: SecretStr | None = None
    webhook_secret: SecretStr | None = None
    bot_login: str | None = Field(default=None, description="the bot's own login; its events are ignored")
    timeout: float = 30.0
    min_write_interval: float = Field(default=1.0, description="seconds between writes (secondary rate limits)")
    max_retries: int = 3
    installation_id: int | None = Field(default=None, description="GitHub App installation to act as")
    max_rate_limit_wait: float = Field(default=30.0, description="longer waits defer the job instead of sleeping")


class RoleModel(BaseModel):
    """Per-role overrides of the default model."""

    model: str | None = None
    base_url: str | None = None
    api_key: SecretStr | None = None
    temperature: float | None = None


class LLMSettings(BaseModel):
    """The chat model every role uses unless `roles` overrides it."""

    provider: Literal["openai", "anthropic", "ollama"] = "openai"
    base_url: str | None = None
    model: str = "gpt-4o-mini"
    api_key: SecretStr | None = None
    temperature: float = 0.0
    timeout: float = 120.0
    max_retries: int = 2
    roles: dict[str, RoleModel] = Field(default_factory=dict)
    # tool-call budgets: min(max, base + per_criterion × criteria) for analyzer, architect, reviewer
    research_base_calls: int = Field(default=8, ge=1)
    research_calls_per_criterion: int = Field(default=4, ge=0)
    research_max_calls: int = Field(default=40, ge=1)
    # the coder's: min(max, base + per_item × open checklist items)
    coder_base_calls: int = Field(default=10, ge=1)
    coder_calls_per_item: int = Field(default=8, ge=0)
    coder_max_calls: int = Field(default=80, ge=1)
    task_token_budget: int = Field(default=1_500_000, ge=1, description="all model tokens of one task")
    recursion_limit: int = Field(default=80, ge=10, description="LangGraph super-steps per task run")
    context_window_tokens: int = Field(default=32_000, ge=1024, description="the engine's budget per call")
    # USD per million tokens: model name -> (input, output); unknown models cost 0 and say so
    prices: dict[str, tuple[float, float]] = Field(default_factory=dict)


class TriggerSettings(BaseModel):
    """Label names and command words users type; configurable per installation."""

    implement_label: str = "forgebot::implement"
    analyze_label: str = "forgebot::analyze"
    implement_command: str = "/implement"
    analyze_command: str = "/analyze"
    review_command: str = "/review"
    cancel_command: str = "/cancel"


class WorkspaceSettings(BaseModel):
    """Git mirrors and per-task worktrees under `<data_dir>/workspaces`."""

    max_bytes: int = Field(default=5 * 1024**3, description="disk bound for mirrors and worktrees together")
    author_name: str = "forgebot"
    author_email: str = "forgebot@users.noreply.invalid"
    allowed_protocols: tuple[str, ...] = Field(default=("https",), description="git transports allowed")
    git_timeout: float = 600.0

class IntakeSettings(BaseModel):
    """The webhook intake: durable inbox, sweeper, authorization cache and allow-list."""

    dedupe_hours: float = Field(default=168.0, ge=72.0, description="keep delivery ids at least 72 h")
    sweep_interval: int = Field(default=60, ge=5, description="seconds between sweeps of the inbox")
    sweep_grace: float = Field(default=15.0, description="an accepted row younger than this is in flight")
    enqueue_timeout: float = Field(default=2.0, description="seconds the request path waits for Redis")
    inbox_sync: Literal["normal", "full"] = Field(
        default="normal", description="SQLite inbox: `full` also survives a power cut, at one fsync per batch"
    )
    access_cache_seconds: float = Field(default=60.0, description="how long a permission answer is reused")
    allowed_projects: list[str] = Field(
        default_factory=list, description="GitLab project ids or paths, GitHub owner/name; empty: any"
    )


class DurabilitySettings(BaseModel):
    """Crash recovery and retention: worker leases, the reaper, how long finished tasks are kept."""

    lease_seconds: float = Field(
        default=30.0, gt=0, description="a running job's lease; a worker silent this long is presumed dead"
    )
    reap_interval: int = Field(default=10, ge=1, description="seconds between reaper passes in each worker")
    retention_days: float = Field(
        default=14.0, gt=0, description="finished tasks' checkpoints, traces and workspaces are kept this long"
    )


class Settings(BaseSettings):
    """Process-wide configuration from `FORGEBOT_*` variables (nested with `__`) and secret files."""

    model_config = SettingsConfigDict(
        env_prefix="FORGEBOT_",
        env_nested_delimiter="__",
        extra="ignore",
        # secret files are named like the variable without the prefix (`gitlab__token`), which is
        # also a valid key of a Kubernetes Secret mounted as a directory
        secrets_prefix="",
        secrets_nested_delimiter="__",
    )

    data_dir: Path = Field(default_factory=_default_data_dir)
    redis_url: str | None = Field(
        default=None, description="unset: `forgebot serve` starts a private Redis under the data dir"
    )
    host: str = "127.0.0.1"
    port: int = 8080
    max_body_bytes: int = 4 * 1024 * 1024
    job_timeout: int = 3600
    max_tries: int = 3
    gitlab: GitLabSettings = Field(default_factory=GitLabSettings)
    github: GitHubSettings = Field(default_factory=GitHubSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    triggers: TriggerSettings = Field(default_factory=TriggerSettings)
    workspace: WorkspaceSettings = Field(default_factory=WorkspaceSettings)
    log_level: str = "INFO"
    worker_metrics_port: int | None = Field(
        default=None,
        description="`forgebot worker` serves its task, token, gate and forge metrics on this port (unset: none)",
    )
    databases: dict[str, SecretStr] = Field(
        default_factory=dict,
        description="name → connection URL for the read-only database tools; `.forgebot.yml` names one",
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # The stock secrets source matches top-level fields only, so `gitlab__token` was ignored;
        # the nested source splits file names on `__` like the environment source does.
        return init_settings, env_settings, dotenv_settings, NestedSecretsSettingsSource(file_secret_settings)
    # intake
    database_url: SecretStr | None = Field(
        default=None,
        description="postgresql://… for the inbox, task store and checkpoints; unset: SQLite in the data dir",
    )
    intake: IntakeSettings = Field(default_factory=IntakeSettings)
    durability: DurabilitySettings = Field(default_factory=DurabilitySettings)

    @property
    def checkpoint_path(self) -> Path:
        return self.data_dir / "checkpoints.sqlite"

    @property
    def inbox_path(self) -> Path:
        return self.data_dir / "inbox.sqlite"

    @classmethod
    def load(cls) -> Settings:
        """Build from the environment; `FORGEBOT_SECRETS_DIR` names a directory of secret files.

        Environment variables win over files, so one value can be overridden without editing the
        mounted Secret.
        """
        import os

        secrets_dir = os.environ.get("FORGEBOT_SECRETS_DIR")
        if secrets_dir:
            if not Path(secrets_dir).is_dir():
                # pydantic-settings only warns; a mistyped mount path must not start a bot without its tokens
                raise ValueError(f"FORGEBOT_SECRETS_DIR={secrets_dir} is not a directory")
            return cls(_secrets_dir=secrets_dir)  # type: ignore[call-arg]
        return cls()
