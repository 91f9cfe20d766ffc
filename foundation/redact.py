"""Redaction: the one place secrets are taken out of text that leaves the process.

Three kinds of text pass here: what the bot republishes (check output in a change description, a
failure's reason in a comment), git's error output (`foundation.gitrunner`), and every log record
(`install` puts `RedactingFilter` on the root logger's handlers).

Check output is written by the repository's own code: it can print anything, including a token it
found in the environment or a file. Before such text is published it passes through `redact`:
forge and model token shapes, `Authorization:` headers, `Bearer`/`Basic` credentials, URL user
info and every secret configured in the settings are replaced by `[REDACTED]`. `fence` then marks
it as untrusted text in Markdown, in a code fence no backtick run inside it can close.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Iterator

from pydantic import BaseModel, SecretStr

MARK = "[REDACTED]"
_PATTERNS = (
    re.compile(r"(?i)\b(?:proxy-)?authorization\s*[:=]\s*[^\r\n]*"),
    re.compile(r"(?i)\b(?:bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{8,}"),
    re.compile(r"\bglpat-[A-Za-z0-9_-]{10,}"),
    re.compile(r"\bgl(?:dt|rt|cbt|ptt|ft|imt|agent|oas|soat)-[A-Za-z0-9_-]{10,}"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"),
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"),
    re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"),
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)", re.S),
    re.compile(r"(?<=://)[^/\s:@]+:[^/\s@]+(?=@)"),  # https://user:password@host
)


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with every token-looking string and each configured secret replaced by `[REDACTED]`."""
    for secret in sorted({s for s in secrets if len(s) >= 4}, key=len, reverse=True):
        text = text.replace(secret, MARK)
    for pattern in _PATTERNS:
        text = pattern.sub(MARK, text)
    return text


def fence(text: str, label: str = "untrusted check output") -> str:
    """A Markdown code fence around `text`, longer than any backtick run inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}text\n{text}\n{ticks}" if not label else f"<sub>{label}</sub>\n\n{ticks}text\n{text}\n{ticks}"


def secrets_of(model: BaseModel) -> list[str]:
    """Every SecretStr value in a settings tree (nested models, dicts and lists included)."""
    return [value for value in _walk(model) if value]


def _walk(value: object) -> Iterator[str]:
    if isinstance(value, SecretStr):
        secret = value.get_secret_value()
        yield secret
        yield from _json_leaves(secret)
    elif isinstance(value, BaseModel):
        for name in type(value).model_fields:
            yield from _walk(getattr(value, name))
    elif isinstance(value, dict):
        for item in value.values():
            yield from _walk(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _walk(item)


def _json_leaves(secret: str) -> Iterator[str]:
    """The longer strings of a secret that is a JSON document (`COMPOSER_AUTH`): a tool may print one
    password of it alone. Short ones (a user name) are not secret and would blank common words."""
    if not secret.lstrip().startswith(("{", "[")):
        return
    try:
        pending = [json.loads(secret)]
    except ValueError:
        return
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
        elif isinstance(item, str) and len(item) >= 8:
            yield item


class RedactingFilter(logging.Filter):
    """Rewrites a record's message and exception text with secrets replaced by `[REDACTED]`.

    An exception can carry a secret in its message: a model gateway that echoes the request's
    `Authorization: Bearer …` header in its 401, a URL with user info in a git error. arq logs every
    failed job with its traceback, and the job's own handler logs it again; without this filter the
    model key would be in the worker's log for anyone who reads logs.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        self._secrets = tuple(s for s in secrets if s)
        self._formatter = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message, self._secrets)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info and not record.exc_text:
            record.exc_text = self._formatter.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text, self._secrets)
        return True


def install(secrets: Iterable[str]) -> None:
    """Filter every handler of the root logger (call after `logging.basicConfig`)."""
    kept = tuple(secrets)
    for handler in logging.getLogger().handlers:
        handler.addFilter(RedactingFilter(kept))
