"""Settings: the one place the process environment is read.

Built once by the entry point (`forgebot ...`, `create_app()`, the worker's startup) and passed
down; tests construct `Settings(...)` directly with `_env_file=None, _secrets_dir=None`.
"""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, Field, PrivateAttr, SecretStr, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    NestedSecretsSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from foundation.proxy import HttpProxy


def _default_data_dir() -> Path:
    return Path.home() / ".local" / "share" / "forgebot"


def _blank_is_unset(value: SecretStr | None) -> SecretStr | None:
    """An empty or whitespace-only secret (`""`, an empty secret file) is no secret: unset, fail closed."""
    if value is not None and not value.get_secret_value().strip():
        return None
    return value


_PEM_KEY = re.compile(r"-----BEGIN ([A-Z ]*)PRIVATE KEY-----\n[A-Za-z0-9+/=\n:,\- ]+\n-----END \1PRIVATE KEY-----")
_ONE_LINE_PEM = re.compile(r"(-----BEGIN [A-Z ]+-----)\s*(.*?)\s*(-----END [A-Z ]+-----)", re.S)


def pem_private_key(text: str, source: str = "the .pem file GitHub gave for the App") -> str:
    """A private key as PEM text (a GitHub App's, the bot's SSH signing key), from the forms it is pasted
    in on a first day; `source` names the file to use instead when it is none of them.

    The .pem file as GitHub gave it; its newlines written as `\\n` (an .env file, a Kubernetes secret
    made from a literal); its newlines turned into spaces (a one-line field); or base64 of the file.
    Anything else raises ValueError: a key PyJWT cannot read made every GitHub call fail with
    "Could not parse the provided public key", naming no setting.
    """
    text = text.strip()
    if "-----BEGIN" not in text:
        try:
            decoded = base64.b64decode(text, validate=True).decode()
        except ValueError:  # binascii.Error and UnicodeDecodeError are both ValueErrors
            decoded = ""
        text = decoded.strip() if "-----BEGIN" in decoded else text
    if "\n" not in text and "\\n" in text:
        text = text.replace("\\n", "\n").strip()
    text = text.replace("\r\n", "\n")
    one_line = _ONE_LINE_PEM.fullmatch(text) if "\n" not in text else None
    if one_line:
        text = "\n".join([one_line.group(1), *one_line.group(2).split(), one_line.group(3)])
    if not _PEM_KEY.search(text):
        raise ValueError("not a PEM private key (-----BEGIN … PRIVATE KEY----- … -----END … PRIVATE KEY-----): "
                         f"use {source}, best mounted as a secret file")
    return text


_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
# headers the HTTP client writes itself (the request's framing and its connection), which a gateway's key never is
_CLIENT_HEADERS = frozenset({"host", "content-length", "content-type", "transfer-encoding", "connection", "te",
                             "upgrade", "keep-alive", "trailer", "expect"})


def request_headers(value: dict[str, SecretStr] | None) -> dict[str, SecretStr] | None:
    """Extra headers for every request to an endpoint, as a gateway in front of it asks (Azure API
    Management's `Ocp-Apim-Subscription-Key`, a gateway's own key or tenant header): without them every
    call was refused and no setting could send them. Names are HTTP tokens and none the client writes
    itself; a value is one line (a header cannot carry a newline: it would start another header)."""
    if value is None:
        return None
    for name, text in value.items():
        if not _HEADER_NAME.fullmatch(name):
            raise ValueError(f"{name!r} is not an HTTP header name")
        if name.lower() in _CLIENT_HEADERS or name.lower().startswith("proxy-"):
            raise ValueError(f"{name} is written by the HTTP client itself, not by a setting")
        if any(c in text.get_secret_value() for c in "\r\n\0"):
            raise ValueError(f"the value of {name} holds a line break: a header value is one line")
    return {name: SecretStr(text.get_secret_value().strip()) for name, text in value.items()}


class GitLabSettings(BaseModel):
    """A GitLab instance (gitlab.com or self-managed)."""

    url: str = Field(
        default="https://gitlab.com",
        description="base URL of the instance without `/api/v4`; set it for self-managed GitLab",
    )
    token: SecretStr | None = Field(default=None, description="the bot user's access token (`api` scope)")
    webhook_secret: SecretStr | None = Field(
        default=None, description="the webhook's secret token; unset: every GitLab delivery is refused (401)"
    )
    bot_user_id: int | None = Field(default=None, description="the bot's own user id; its events are ignored")
    timeout: float = Field(default=30.0, description="seconds per GitLab API request")
    max_retries: int = Field(
        default=3, description="retries of an API call after a 5xx, a timeout or a short rate limit"
    )
    max_rate_limit_wait: float = Field(
        default=30.0, description="seconds to sleep for a rate limit; a longer wait defers the job instead"
    )

    @field_validator("webhook_secret")
    @classmethod
    def _blank_secret_is_unset(cls, value: SecretStr | None) -> SecretStr | None:
        return _blank_is_unset(value)


def _install_proxy(value: SecretStr | None) -> SecretStr | None:
    """An `http://HOST:PORT` URL (`foundation.proxy`), or `direct`, kept as the empty secret: a value
    that is no secret must not be one, or every "direct" in a log line would be redacted."""
    value = _blank_is_unset(value)
    if value is not None and value.get_secret_value().strip() == "direct":
        return SecretStr("")
    if value is not None:
        HttpProxy.parse(value.get_secret_value())
    return value


def _branch_prefix(value: str) -> str:
    """A prefix git accepts as the start of a branch name (`git check-ref-format`), with a letter first."""
    bad = re.search(r"\.\.|@\{|//|/\.|\.lock/|[\x00-\x20~^:?*\[\\\x7f]", value)
    if not value[:1].isalpha() or bad or value.endswith((".", ".lock")):
        raise ValueError(f"{value!r} cannot start a git branch name: letters, digits, `/`, `-`, `_` and `.`, "
                         "beginning with a letter (e.g. `forgebot/` or `feature/forgebot-`)")
    return value


class GitHubSettings(BaseModel):
    """GitHub.com or GitHub Enterprise, with a personal token or a GitHub App."""

    api_url: str = Field(
        default="https://api.github.com", description="REST API root; GitHub Enterprise: `https://HOST/api/v3`"
    )
    token: SecretStr | None = Field(
        default=None, description="a personal access token; ignored when `app_id` and `private_key` are set"
    )
    app_id: int | None = Field(default=None, description="GitHub App id; with `private_key` the bot acts as the App")
    private_key: SecretStr | None = Field(
        default=None, description="the GitHub App's private key (PEM text); best mounted as a secret file"
    )
    webhook_secret: SecretStr | None = Field(
        default=None, description="the webhook secret; unset: every GitHub delivery is refused (401)"
    )
    bot_login: str | None = Field(default=None, description="the bot's own login; its events are ignored")
    timeout: float = Field(default=30.0, description="seconds per GitHub API request (whole seconds are used)")
    min_write_interval: float = Field(default=1.0, description="seconds between writes (secondary rate limits)")
    max_retries: int = Field(
        default=3, description="retries of an API call after a 5xx, a timeout or a short rate limit"
    )
    installation_id: int | None = Field(
        default=None, description="GitHub App installation to act as when a webhook payload names none"
    )
    max_rate_limit_wait: float = Field(
        default=30.0, description="seconds to sleep for a rate limit; a longer wait defers the job instead"
    )

    @field_validator("webhook_secret")
    @classmethod
    def _blank_secret_is_unset(cls, value: SecretStr | None) -> SecretStr | None:
        return _blank_is_unset(value)

    @field_validator("private_key")
    @classmethod
    def _pem_text(cls, value: SecretStr | None) -> SecretStr | None:
        value = _blank_is_unset(value)
        return None if value is None else SecretStr(pem_private_key(value.get_secret_value()))


StructuredOutput = Literal["auto", "json_schema", "function_calling", "json_mode"]


class RoleModel(BaseModel):
    """Per-role overrides of the default model."""

    model: str | None = Field(default=None, description="this role's model name; unset: `llm.model`")
    base_url: str | None = Field(default=None, description="this role's endpoint; unset: `llm.base_url`")
    api_key: SecretStr | None = Field(default=None, description="this role's API key; unset: `llm.api_key`")
    temperature: float | None = Field(
        default=None, description="this role's sampling temperature; unset: `llm.temperature`"
    )
    structured_output: StructuredOutput | None = Field(
        default=None, description="this role's structured-output method; unset: `llm.structured_output`"
    )
    headers: dict[str, SecretStr] | None = Field(
        default=None, description="this role's extra request headers (JSON object); unset: `llm.headers`"
    )

    @field_validator("headers")
    @classmethod
    def _headers(cls, value: dict[str, SecretStr] | None) -> dict[str, SecretStr] | None:
        return request_headers(value)


class LLMSettings(BaseModel):
    """The chat model every role uses unless `roles` overrides it."""

    provider: Literal["openai", "anthropic", "ollama"] = Field(
        default="openai", description="`openai` is any OpenAI-compatible endpoint (vLLM, llama.cpp, gateways)"
    )
    base_url: str | None = Field(
        default=None, description="the model endpoint; unset: the provider's public API (or local Ollama)"
    )
    model: str = Field(default="gpt-4o-mini", description="the model name every role uses unless overridden")
    api_key: SecretStr | None = Field(
        default=None, description="the model API key; `anthropic` needs one, `openai` unless `base_url` is set"
    )
    temperature: float = Field(
        default=0.0, description="sampling temperature; 0 keeps runs as repeatable as the model allows"
    )
    timeout: float = Field(default=120.0, description="seconds per model call; raise it for slow local models")
    max_retries: int = Field(
        default=2, ge=0, le=10,
        description="retries of a model call that hit a rate limit (honouring Retry-After), a 5xx or a timeout",
    )
    structured_output: StructuredOutput = Field(
        default="auto",
        description="how roles ask for structured answers: `json_schema` (response_format), `function_calling` "
        "(a forced tool call), `json_mode`; `auto` tries them in turn and remembers what the endpoint supports",
    )
    headers: dict[str, SecretStr] = Field(
        default_factory=dict,
        description="extra HTTP headers sent with every model request, as a JSON object of name to value (secret), "
        "for a gateway that asks for its own key header: `{\"Ocp-Apim-Subscription-Key\": \"…\"}`",
    )
    roles: dict[str, RoleModel] = Field(default_factory=dict, description="per-role overrides, keyed by role name")
    # tool-call budgets: min(max, base + per_criterion × criteria) for analyzer, architect, reviewer
    research_base_calls: int = Field(
        default=8, ge=1, description="tool calls every analyzer/architect/reviewer run gets before scaling"
    )
    research_calls_per_criterion: int = Field(
        default=4, ge=0, description="extra research tool calls per acceptance criterion of the issue"
    )
    research_max_calls: int = Field(
        default=40, ge=1, description="cap on one research run's tool calls; lower it to bound cost"
    )
    # the coder's: min(max, base + per_item × open checklist items)
    coder_base_calls: int = Field(default=10, ge=1, description="tool calls every coder run gets before scaling")
    coder_calls_per_item: int = Field(default=8, ge=0, description="extra coder tool calls per open checklist item")
    coder_max_calls: int = Field(default=80, ge=1, description="cap on one coder run's tool calls")
    task_token_budget: int = Field(
        default=1_500_000, ge=1,
        description="tokens (input + output) all roles of one task may spend; past it the task stops",
    )
    recursion_limit: int = Field(
        default=80, ge=10, description="LangGraph super-steps per graph run; guards against a looping graph"
    )
    context_window_tokens: int = Field(
        default=32_000, ge=1024,
        description="tokens of the model's context window: every request (prompt, standards, tools, diff, "
        "context and the answer's reserve) is fitted to it, or the task stops naming the window it needs",
    )
    max_output_tokens: int = Field(
        default=4096, ge=64,
        description="tokens one model call may write (sent with every request); at most a quarter of "
        "`context_window_tokens` is used, the rest of the window is the prompt's",
    )
    # USD per million tokens: model name -> (input, output); unknown models cost 0 and say so
    prices: dict[str, tuple[float, float]] = Field(
        default_factory=dict,
        description='USD per million tokens, e.g. `{"gpt-4o-mini": [0.15, 0.6]}` (input, output); for cost reports',
    )

    @field_validator("headers")
    @classmethod
    def _headers(cls, value: dict[str, SecretStr]) -> dict[str, SecretStr]:
        return request_headers(value) or {}


class EmbedderSettings(BaseModel):
    """The vector leg of code search: the offline model, an OpenAI-compatible endpoint, or none."""

    kind: Literal["offline", "http", "off"] = Field(
        default="offline",
        description="`offline`: all-MiniLM-L6-v2 on this machine's CPU; `http`: an OpenAI-compatible "
        "`POST {base_url}/embeddings`; `off`: lexical and graph legs only",
    )
    base_url: str | None = Field(
        default=None, description="`http` only: the endpoint root, e.g. `https://gateway.example/v1`"
    )
    model: str = Field(default="", description="`http` only: the embedding model name the endpoint serves")
    dimension: int = Field(default=0, ge=0, description="`http` only: the length of that model's vectors")
    api_key: SecretStr | None = Field(
        default=None, description="`http` only: sent as a bearer token to `base_url` and nowhere else"
    )
    headers: dict[str, SecretStr] = Field(
        default_factory=dict, description="`http` only: extra HTTP headers sent to `base_url` (JSON object, secret "
        "values), for a gateway that asks for its own key header"
    )
    timeout: float = Field(default=60.0, gt=0, description="`http` only: seconds per embedding request")
    batch_size: int = Field(default=64, ge=1, description="`http` only: texts per embedding request")
    threads: int = Field(
        default=1, ge=0,
        description="`offline` only: CPU threads the model uses (0: all); base indexes embed in the background "
        "while tasks run, so keep a core for them (`forgebot index`, `search` and `memory` use all unless set)",
    )
    wait_seconds: float = Field(
        default=5.0, ge=0,
        description="seconds a task waits for its base index's vectors before it starts on the lexical and "
        "graph legs (the vector leg joins when the background build ends)",
    )

    @field_validator("api_key")
    @classmethod
    def _blank_key_is_unset(cls, value: SecretStr | None) -> SecretStr | None:
        return _blank_is_unset(value)

    @field_validator("headers")
    @classmethod
    def _headers(cls, value: dict[str, SecretStr]) -> dict[str, SecretStr]:
        return request_headers(value) or {}

    @model_validator(mode="after")
    def _http_is_complete(self) -> EmbedderSettings:
        if self.kind == "http":
            missing = [name for name in ("base_url", "model", "dimension") if not getattr(self, name)]
            if missing:
                raise ValueError(f"embedder kind `http` needs {', '.join(missing)}")
            if not str(self.base_url).startswith(("http://", "https://")):
                raise ValueError("embedder base_url must be an http(s) URL")
        return self


class ReviewSettings(BaseModel):
    """Review noise control and limits; `.forgebot.yml`'s `review:` section overrides them per repository."""

    severity_threshold: Literal["blocker", "major", "minor", "info"] = Field(
        default="minor", description="findings below this severity are not posted; raise it for quieter reviews"
    )
    max_findings: int = Field(
        default=15, ge=1, description="inline findings posted per review, worst first; the rest are counted"
    )
    max_file_lines: int = Field(
        default=1500, ge=10, description="diff lines of one file; a larger file is skipped and named in the summary"
    )
    diff_budget_tokens: int = Field(
        default=24_000, ge=1000,
        description="tokens of diff handed to the reviewer; files past it are skipped and named",
    )


class TriggerSettings(BaseModel):
    """Label names and command words users type; configurable per installation."""

    implement_label: str = Field(
        default="forgebot::implement", description="adding this label to an issue starts an implementation"
    )
    analyze_label: str = Field(
        default="forgebot::analyze", description="adding this label to an issue starts an analysis"
    )
    implement_command: str = Field(default="/implement", description="comment command that starts an implementation")
    analyze_command: str = Field(default="/analyze", description="comment command that starts an analysis")
    review_command: str = Field(
        default="/review", description="comment command on a merge/pull request that starts a review"
    )
    cancel_command: str = Field(default="/cancel", description="comment command that cancels the running task")


# the bot's git identity where neither the settings nor the forge give one (`WorkspaceSettings.author`)
DEFAULT_AUTHOR = ("forgebot", "forgebot@users.noreply.invalid")


class WorkspaceSettings(BaseModel):
    """Git mirrors and per-task worktrees under `<data_dir>/workspaces`."""

    # the bot account's (name, email) per forge, as the forge answered at start (`learn_author`)
    _learned: dict[str, tuple[str, str]] = PrivateAttr(default_factory=dict)

    max_bytes: int = Field(
        default=5 * 1024**3,
        description="bytes of disk for mirrors and worktrees together; finished worktrees are pruned to fit",
    )
    branch_prefix: str = Field(
        default="forgebot/", min_length=2, max_length=60,
        description="what the bot's branches start with (`<prefix><issue>-<slug>`), e.g. `feature/forgebot-` "
        "where a push rule names branches; the bot replaces only branches of that form, so pick a prefix no "
        "person's branch starts with",
    )
    author_name: str | None = Field(
        default=None, description="git author and committer name of the bot's commits; unset: the bot account's "
        f"name as GitLab shows it, else `{DEFAULT_AUTHOR[0]}`",
    )
    author_email: str | None = Field(
        default=None, description="git author and committer email of the bot's commits; unset: the bot account's "
        f"commit email as GitLab shows it (push rules on authors accept it), else `{DEFAULT_AUTHOR[1]}`",
    )
    signing_key: SecretStr | None = Field(
        default=None, description="an SSH private key (OpenSSH text, no passphrase) the bot signs its commits with, "
        "where a push rule or ruleset refuses unsigned commits; register its public key on the bot account as a "
        "signing key (`forgebot check` prints it)",
    )
    allowed_protocols: tuple[str, ...] = Field(
        default=("https",), description="git transports a clone or fetch may use (git's `protocol.<name>.allow`)"
    )
    git_hosts: tuple[str, ...] = Field(
        default=(),
        description="extra base URLs git credentials may be sent to; the forge's own URL is always allowed",
    )
    git_timeout: float = Field(
        default=600.0, description="seconds one git command may run; raise it for huge repositories"
    )

    @field_validator("branch_prefix")
    @classmethod
    def _git_prefix(cls, value: str) -> str:
        return _branch_prefix(value)

    @field_validator("author_name", "author_email")
    @classmethod
    def _blank_author_is_unset(cls, value: str | None) -> str | None:
        return (value or "").strip() or None

    def learn_author(self, forge: str, name: str, email: str) -> None:
        """Keep what `forge` says of the bot account (`bot.intake.identity`), for `author`."""
        self._learned[forge] = (name, email)

    def author(self, forge: str) -> tuple[str, str]:
        """(name, email) of the bot's commits on `forge`: each as configured, else as the forge shows the bot
        account, else forgebot's placeholder.

        Why the account's own: GitLab's push rules "Reject unverified users" and "Check whether the commit
        author is a GitLab user" refuse a commit whose email is not one of the pushing user's, and refused
        every push of a bot left with the placeholder, after all of a task's work.
        """
        name, email = self._learned.get(forge, ("", ""))
        return self.author_name or name or DEFAULT_AUTHOR[0], self.author_email or email or DEFAULT_AUTHOR[1]

    def own_emails(self, forge: str) -> tuple[str, ...]:
        """The emails the bot's commits on `forge` may carry: `author`'s, and the placeholder when none is
        configured (a branch pushed before the account's email was known, or by an earlier release)."""
        email = self.author(forge)[1]
        return (email,) if self.author_email or email == DEFAULT_AUTHOR[1] else (email, DEFAULT_AUTHOR[1])

    @field_validator("signing_key")
    @classmethod
    def _signing_pem(cls, value: SecretStr | None) -> SecretStr | None:
        value = _blank_is_unset(value)
        source = "the private key file `ssh-keygen -t ed25519 -N ''` wrote"
        return None if value is None else SecretStr(pem_private_key(value.get_secret_value(), source))


class SandboxSettings(BaseModel):
    """The check sandbox: what a repository's install, test, smoke and lint commands may reach.

    Checks run the repository's code. They run in user namespaces on a read-only view of the host
    with no network, the bot's data directory, secrets and host sockets hidden, private /tmp, and
    their writes to the worktree and HOME on a bounded layer that is discarded; where the host
    refuses namespaces, or the worker runs as root, they are not run at all unless a setting
    accepts that (docs/security.md).
    """

    allow_unisolated: bool = Field(
        default=False,
        description="run checks even where user namespaces are unavailable (then they have network and see "
        "the data dir and secrets); the status comment and the change description list what was missing",
    )
    allow_root: bool = Field(
        default=False,
        description="run checks although the worker runs as root (a check then reads every file root can that "
        "is not hidden, and its process limit is only sampled); run the worker as an unprivileged user instead",
    )
    install_network: bool = Field(
        default=True,
        description="repositories may give their install command network (`.forgebot.yml` "
        "`commands.install_network: true`): HTTPS to public addresses through the worker's proxy, never "
        "loopback, private or link-local ones; false: no install has network. Test, smoke and lint never have it",
    )
    install_private_hosts: tuple[str, ...] = Field(
        default=(),
        description="host names an install may reach through the proxy although they resolve to a private "
        "address (an internal package mirror); loopback and link-local addresses stay refused",
    )
    install_secrets: dict[str, SecretStr] = Field(
        default_factory=dict,
        description="environment variables (JSON object, secret values) an install command gets when its "
        "profile names them and it runs none of the repository's code: `COMPOSER_AUTH` for a private Composer "
        "registry (the php profile's `composer install --no-scripts --no-plugins`). Never given to a command "
        "`.forgebot.yml` wrote, nor to tests, smoke or lint",
    )
    install_proxy: SecretStr | None = Field(
        default=None,
        description="the proxy an install's HTTPS tunnels leave through, `http://[user:password@]host:port` (a "
        "mandatory corporate proxy); unset: the worker's own HTTPS_PROXY, if any; `direct`: none. The install "
        "sees neither it nor its password, and loopback, private and link-local targets stay refused",
    )
    max_processes: int = Field(default=256, ge=8, description="processes and threads one check may run at once")
    max_file_mb: int = Field(default=1024, ge=1, description="MiB of the largest file one check may write")
    tmp_mb: int = Field(default=512, ge=1, description="MiB of each private tmpfs (/tmp, /var/tmp, /dev/shm)")
    disk_mb: int = Field(
        default=2048, ge=1,
        description="MiB the checks of one run may write to the worktree and HOME together (a memory-backed "
        "layer, discarded after the run); a write past it fails and so does the check",
    )
    hidden_paths: tuple[Path, ...] = Field(
        default=(), description="further paths checks must not see (the data dir, secrets and /run are always hidden)"
    )

    @field_validator("install_secrets")
    @classmethod
    def _secret_names(cls, value: dict[str, SecretStr]) -> dict[str, SecretStr]:
        bad = [name for name in value if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name)]
        if bad:
            raise ValueError(f"{', '.join(sorted(bad))}: not an environment variable name")
        return value

    @field_validator("install_proxy")
    @classmethod
    def _proxy_url(cls, value: SecretStr | None) -> SecretStr | None:
        return _install_proxy(value)


_PROJECT_KEY = re.compile(r"^(gitlab|github|local):\S+$")


class DatabaseConnection(BaseModel):
    """A database the analyzer may query read-only, and the projects whose `.forgebot.yml` may name it.

    A repository's configuration is untrusted: without the binding, any repository could name
    another project's connection and read its data. A connection lists no project by default, so
    a plain URL (the earlier form of this setting) serves nobody until an operator says whom.
    """

    url: SecretStr = Field(description="postgresql://, mysql://, mariadb:// or sqlite:///path")
    projects: tuple[str, ...] = Field(
        default=(),
        description="who may use it: `gitlab:<project id or path>`, `github:<repository id or owner/name>`, "
        "`local:<checkout path>` (a local run); empty: no project",
    )

    @model_validator(mode="before")
    @classmethod
    def _url_alone(cls, value: object) -> object:
        return {"url": value} if isinstance(value, str | SecretStr) else value

    @field_validator("projects")
    @classmethod
    def _forge_named(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        # a bare `42` would be GitLab project 42 and GitHub repository 42 at once
        for entry in value:
            if not _PROJECT_KEY.match(entry):
                raise ValueError(f"{entry!r}: name the forge, e.g. `gitlab:42`, `github:owner/name`")
        # forge paths are case-insensitive; a checkout path is not
        return tuple(entry if entry.startswith("local:") else entry.lower() for entry in value)


class IntakeSettings(BaseModel):
    """The webhook intake: durable inbox, sweeper, authorization cache and allow-list."""

    dedupe_hours: float = Field(
        default=168.0, ge=72.0,
        description="hours a delivery id is remembered so redeliveries are ignored (at least 72)",
    )
    sweep_interval: int = Field(
        default=60, ge=5, description="seconds between sweeps that requeue stranded deliveries (at least once a minute)"
    )
    sweep_grace: float = Field(
        default=15.0, description="seconds an accepted delivery is left alone before the sweeper requeues it"
    )
    enqueue_timeout: float = Field(
        default=2.0, description="seconds a webhook request waits for Redis; after that the sweeper queues it"
    )
    inbox_sync: Literal["normal", "full"] = Field(
        default="normal", description="SQLite inbox: `full` also survives a power cut, at one fsync per batch"
    )
    access_cache_seconds: float = Field(
        default=60.0, description="seconds a user's permission lookup is reused"
    )
    repo_labels_cache_seconds: float = Field(
        default=60.0, ge=0,
        description="seconds a repository's trigger labels (`.forgebot.yml` `labels`) are reused by the receiver",
    )
    repo_labels_timeout: float = Field(
        default=3.0, gt=0, le=8.0,
        description="seconds the receiver waits for the forge to answer a repository's `.forgebot.yml`; "
        "after that the server's labels apply",
    )
    allowed_projects: list[str] = Field(
        default_factory=list, description="GitLab project ids or paths, GitHub owner/name; empty: any"
    )
    max_event_age_hours: float | None = Field(
        default=72.0, ge=0,
        description="deliveries whose payload timestamps are all older are answered 200 `ignored` "
        "(replay guard; keep it below `dedupe_hours`); 0: off",
    )
    unscoped_hooks: bool = Field(
        default=False,
        description="also accept `/webhooks/gitlab` and `/webhooks/github` (no project id) with the master "
        "webhook secret, while old hooks are moved to `forgebot hooks` URLs; anyone who knows that secret "
        "can then forge deliveries for every project",
    )
    public_url: str | None = Field(
        default=None,
        description="the receiver's address as the forge reaches it (e.g. `https://bot.example.com`); "
        "`forgebot hooks` builds each project's hook URL from it; under a path (`https://tools.example.com/forgebot`) "
        "the service answers with the path and without it, whether a proxy strips it or not",
    )


class QuestionSettings(BaseModel):
    """need_info: how often a task may ask before it reports blocked, and how long it waits."""

    max_rounds: int = Field(
        default=2, ge=0, description="question rounds per task; 0 reports blocked at once instead of asking"
    )
    wait_hours: float = Field(
        default=72.0, gt=0, description="hours a task waits for an answer before it expires, with a comment"
    )


class MemorySettings(BaseModel):
    """Project memory (docs/memory.md): how much history and forge discussion a repository's memory keeps."""

    max_commits: int = Field(
        default=20_000, ge=0,
        description="newest commits reachable from the default branch remembered (message, touched symbols)"
    )
    discussions_per_sync: int = Field(
        default=50, ge=0,
        description="merged changes and closed issues read from the forge per task start, each; 0: none",
    )


class DurabilitySettings(BaseModel):
    """Crash recovery and retention: worker leases, the reaper, how long finished tasks are kept."""

    lease_seconds: float = Field(
        default=30.0, gt=0, description="a running job's lease; a worker silent this long is presumed dead"
    )
    reap_interval: int = Field(default=10, ge=1, description="seconds between reaper passes in each worker")
    retry_seconds: float = Field(
        default=15.0, gt=0, le=60,
        description="a task whose model or forge was unavailable is tried again after this many seconds, four "
        "times longer after each further try (15, 60, 240 s; at most 600); `max_tries` bounds the tries",
    )
    retention_days: float = Field(
        default=14.0, gt=0, description="finished tasks' checkpoints, traces and workspaces are kept this long"
    )


MIN_TOKEN_CHARS = 32
MIN_TOKEN_DISTINCT = 8


def _strong_enough(value: SecretStr | None) -> SecretStr | None:
    """Refuse a console secret that can be guessed: the operator token is offered over the network
    and each per-task link carries an HMAC made with a key derived from these, which a weak secret
    lets anyone holding one link search for offline."""
    if value is None:
        return None
    secret = value.get_secret_value()
    if len(secret) < MIN_TOKEN_CHARS or len(set(secret)) < MIN_TOKEN_DISTINCT:
        raise ValueError(
            f"too weak: use at least {MIN_TOKEN_CHARS} characters, {MIN_TOKEN_DISTINCT} or more of them "
            "different, from a random source (e.g. `openssl rand -hex 32`)"
        )
    return value


class ConsoleSettings(BaseModel):
    """The task console (docs/console.md): read-only pages served by `forgebot web` and `serve`.

    Off unless a secret is set: `operator_token` opens the task list and health pages, and every
    per-task link in a status comment is signed with a key derived from `link_secret` (or, when that
    is unset, from the operator token), so a link opens one task's page and expires.
    """

    operator_token: SecretStr | None = Field(
        default=None, description="opens the console's task list and health pages (secret); unset: they are off"
    )
    link_secret: SecretStr | None = Field(
        default=None,
        description="signs the per-task links in status comments (secret); unset: derived from `operator_token`",
    )
    public_url: str = Field(
        default="",
        description="the console's address as users reach it (`https://forgebot.example.com`); unset: no links; "
        "under a path, served with the path and without it",
    )
    link_hours: float = Field(default=720.0, gt=0, description="hours a per-task link in a status comment stays valid")
    page_size: int = Field(default=50, ge=1, le=500, description="tasks per page of the console's task list")
    failed_logins_per_client: int = Field(
        default=5, ge=1, description="wrong operator tokens one client may offer per minute; past it 429"
    )
    failed_logins_overall: int = Field(
        default=30, ge=1, description="wrong operator tokens all clients together may offer per minute; past it 429"
    )

    @field_validator("operator_token", "link_secret")
    @classmethod
    def _blank_secret_is_unset(cls, value: SecretStr | None) -> SecretStr | None:
        return _strong_enough(_blank_is_unset(value))

    @property
    def enabled(self) -> bool:
        return self.operator_token is not None or self.link_secret is not None


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

    data_dir: Path = Field(
        default_factory=_default_data_dir,
        description="checkpoints, inbox, mirrors, indexes, traces and the private Redis live here",
    )
    redis_url: str | None = Field(
        default=None, description="unset: `forgebot serve` starts a private Redis under the data dir"
    )
    secrets_dir: Path | None = Field(
        default=None,
        description="directory of secret files, one per setting (`gitlab__token`); hidden from checks",
    )
    host: str = Field(
        default="127.0.0.1", description="listen address of the webhook receiver; `0.0.0.0` in a container"
    )
    port: int = Field(default=8080, description="listen port of the webhook receiver")
    max_body_bytes: int = Field(
        default=4 * 1024 * 1024, description="bytes of a webhook body; a larger one is refused with 413"
    )
    max_connections: int = Field(
        default=200, ge=1, description="open connections the webhook receiver serves at once; more get 503"
    )
    keep_alive_seconds: int = Field(
        default=5, ge=1, description="seconds the receiver keeps an idle connection open"
    )
    body_timeout_seconds: float = Field(
        default=10.0, gt=0, description="seconds a webhook body may take to arrive; a slower one is refused with 408"
    )
    job_timeout: int = Field(default=3600, description="seconds one task job may run before the worker stops it")
    max_tries: int = Field(
        default=3, description="attempts of a failing job; after the last one the task reports failure"
    )
    gitlab: GitLabSettings = Field(default_factory=GitLabSettings)
    github: GitHubSettings = Field(default_factory=GitHubSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    embedder: EmbedderSettings = Field(default_factory=EmbedderSettings)
    triggers: TriggerSettings = Field(default_factory=TriggerSettings)
    review: ReviewSettings = Field(default_factory=ReviewSettings)
    workspace: WorkspaceSettings = Field(default_factory=WorkspaceSettings)
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = Field(
        default="INFO", description="Python log level of the service's log lines"
    )
    questions: QuestionSettings = Field(default_factory=QuestionSettings)
    memory: MemorySettings = Field(default_factory=MemorySettings)
    worker_metrics_port: int | None = Field(
        default=None,
        description="`forgebot worker` serves its task, token, gate and forge metrics on this port (unset: none; "
        "`forgebot serve` then gives its worker a free loopback port and adds them to its own `/metrics`)",
    )
    worker_metrics_host: str = Field(
        default="0.0.0.0", description="the address `forgebot worker` serves its metrics on"
    )
    databases: dict[str, DatabaseConnection] = Field(
        default_factory=dict,
        description='name → `{"url": …, "projects": [...]}` for the read-only database tools; a repository\'s '
        "`.forgebot.yml` names one, and only the listed projects may",
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
    console: ConsoleSettings = Field(default_factory=ConsoleSettings)

    @field_validator("database_url")
    @classmethod
    def _postgres_url(cls, value: SecretStr | None) -> SecretStr | None:
        """A PostgreSQL URL, refused here when it cannot be one: given another scheme, or a password whose
        `@` or `/` is not percent-encoded, psycopg failed at the first connection with a message that
        quoted the whole URL, password included, into the log."""
        value = _blank_is_unset(value)
        if value is None:
            return None
        parts = urlsplit(value.get_secret_value().strip())
        if parts.scheme not in ("postgresql", "postgres"):
            raise ValueError("must be a postgresql:// URL (the task store and checkpoints are PostgreSQL when it is "
                             "set; unset, they are SQLite in the data dir)")
        if "@" in parts.path + parts.query + parts.fragment or parts.netloc.count("@") > 1:
            raise ValueError("the password holds `@`, `/` or `#` as they are: percent-encode them (`%40`, `%2F`, "
                             "`%23`)")
        return value

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
        mounted Secret. Raises `ConfigError` with one line per refused variable or secret file.
        """
        import os

        from pydantic import ValidationError

        from foundation import variables

        secrets_dir = os.environ.get("FORGEBOT_SECRETS_DIR")
        refused = variables.invalid(cls, os.environ)
        if secrets_dir and not Path(secrets_dir).is_dir():
            # pydantic-settings only warns; a mistyped mount path must not start a bot without its tokens
            refused.append(f"FORGEBOT_SECRETS_DIR={secrets_dir} is not a directory")
        if refused:
            raise ConfigError(refused)
        try:
            return cls(_secrets_dir=secrets_dir) if secrets_dir else cls()  # type: ignore[call-arg]
        except ValidationError as exc:
            raise ConfigError(variables.explain(exc, os.environ, Path(secrets_dir) if secrets_dir else None)) from None

    @classmethod
    def unknown_variables(cls) -> list[str]:
        """One line per `FORGEBOT_*` variable that no setting reads (a misspelt name does nothing)."""
        import os

        from foundation import variables

        return variables.unknown(cls, os.environ)


class ConfigError(ValueError):
    """Variables or secret files the settings refuse, one line each (no traceback for an operator)."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines
