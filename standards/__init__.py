"""Language standards: the Markdown rules roles receive for a profile's language."""

from __future__ import annotations

import re
from importlib import resources

_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")


def available() -> list[str]:
    """Names of the standards documents shipped in this package."""
    root = resources.files(__name__)
    return sorted(p.name.removesuffix(".md") for p in root.iterdir() if p.name.endswith(".md"))


def load(language: str) -> str:
    """Return `standards/<language>.md`; a name with no document is an error, never an empty text."""
    if not _NAME.match(language):
        raise ValueError(f"invalid standards name {language!r}")
    resource = resources.files(__name__).joinpath(f"{language}.md")
    if not resource.is_file():
        raise LookupError(f"no standards document for {language!r} (known: {', '.join(available())})")
    return resource.read_text(encoding="utf-8")
