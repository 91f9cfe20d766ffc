"""Redaction of untrusted text the bot republishes (check output in a change description).

Check output is written by the repository's own code: it can print anything, including a token it
found in the environment or a file. Before such text is published it passes through `redact`:
forge and model token shapes, `Authorization:` headers, `Bearer`/`Basic` credentials, URL user
info and every secret configured in the settings are replaced by `[REDACTED]`. `fence` then marks
it as untrusted text in Markdown, in a code fence no backtick run inside it can close.
"""

from __future__ import annotations

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
        yield value.get_secret_value()
    elif isinstance(value, BaseModel):
        for name in type(value).model_fields:
            yield from _walk(getattr(value, name))
    elif isinstance(value, dict):
        for item in value.values():
            yield from _walk(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _walk(item)
