"""Log records lose their credentials before they are written.

An exception can carry a secret in its message: a model gateway that echoes the request's
`Authorization: Bearer …` header in its 401, a URL with user info in a git error. arq logs every
failed job with its traceback, and the job's own handler logs it again; without this filter the
model key would be in the worker's log for anyone who reads logs. `install` puts a filter on the
root logger's handlers that passes the formatted message and the traceback text through
`foundation.redact.redact` with every configured secret.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable


class RedactingFilter(logging.Filter):
    """Rewrites a record's message and exception text with secrets replaced by `[REDACTED]`."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        self._secrets = tuple(s for s in secrets if s)
        self._formatter = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        from foundation.redact import redact  # a leaf module of patterns; nothing of the agent is loaded

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
