"""Prompt templates as files, rendered strictly; `catalog.toml` declares each one.

`render(name, **vars)` loads `prompts/<file>` with StrictUndefined, so a missing variable is an
error at render time, never an empty string in a prompt.
"""

from __future__ import annotations

import re
import tomllib
import unicodedata
from collections.abc import Callable
from functools import cache
from importlib import resources
from typing import Any, Literal

import jinja2
from pydantic import BaseModel, ConfigDict

__all__ = ["ESCAPED", "Catalog", "PromptSpec", "boundary", "catalog", "environment", "neutralise", "render", "terms"]


class PromptSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    file: str
    role: str
    variables: tuple[str, ...] = ()
    budget_tokens: int
    kind: Literal["system", "task", "fragment", "report"] = "system"
    tools: tuple[str, ...] = ()  # tool names the text tells the model to use; checked against the role


class Catalog(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    prompts: dict[str, PromptSpec]


@cache
def catalog() -> Catalog:
    text = resources.files("prompts").joinpath("catalog.toml").read_text(encoding="utf-8")
    return Catalog.model_validate(tomllib.loads(text))


@cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("prompts", ""),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals["fenced"] = _fenced
    return env


def environment() -> jinja2.Environment:
    """The shared Jinja environment (tests parse templates with it)."""
    return _environment()


def render(name: str, **variables: Any) -> str:
    """Render the catalogued prompt `name`; unknown names and missing variables raise."""
    spec = catalog().prompts.get(name)
    if spec is None:
        raise KeyError(f"prompt {name!r} is not in prompts/catalog.toml")
    return _environment().get_template(spec.file).render(**variables)


@cache
def terms(forge: str) -> dict[str, str]:
    """Return the forge's vocabulary (`forge_name`, `change`, `change_short`)."""
    text = resources.files("prompts").joinpath("terms.toml").read_text(encoding="utf-8")
    table = tomllib.loads(text)
    if forge not in table:
        raise KeyError(f"no terms for forge {forge!r}")
    return {str(k): str(v) for k, v in table[forge].items()}


_TAG = re.compile(r"^[a-z][a-z_]*$")
# `<`, `/` and `>` and the characters a model reads as them (compatibility forms, angle quotation
# marks and brackets, the Canadian syllabic and modifier arrowheads, slashes).
_LESS = "<\ufe64\uff1c\u2039\u2329\u3008\u27e8\u276c\u276e\u2770\u02c2\u1438"
_SLASH = frozenset("/\uff0f\u2044\u2215\u29f8\u2571")
_GREATER = frozenset(">\ufe65\uff1e\u203a\u232a\u3009\u27e9\u276d\u276f\u2771\u02c3\u1433")
_LESS_FOUND = re.compile(f"[{_LESS}]")
ESCAPED = "<\\"  # what a neutralised `<` becomes; the role prompts say it stands for `<`


def _invisible(char: str) -> bool:
    """Whitespace, controls, format characters (zero-width, bidi), private use and combining marks."""
    return char.isspace() or unicodedata.category(char)[0] in "CMZ"


def _name_char(char: str) -> bool:
    return char.isalnum() or char in "_-:."


class _Scan:
    """A cursor over the text after one `<`: each scan stops at the first character it does not
    take, and none takes a `<`, so the scans of all the text's `<` cover it about once (linear)."""

    def __init__(self, text: str, at: int) -> None:
        self.text, self.i, self.end = text, at, len(text)

    def skip(self, take: Callable[[str], bool]) -> int:
        start = self.i
        while self.i < self.end and take(self.text[self.i]):
            self.i += 1
        return self.i - start

    def next_in(self, chars: frozenset[str]) -> bool:
        return self.i < self.end and self.text[self.i] in chars


def _opens_markup(text: str, at: int) -> bool:
    """Whether the `<` at `at` starts what a reader could take for a tag.

    A closing tag: past invisible characters, a `/` (or lookalike), then a letter of any script.
    An opening one: a name starting with a letter, then the tag's end (`>`, `/`, the text's end) or
    an attribute (`name=`). So `i<n;`, `$i < count($x)`, `<=` and `<?php` stay as they are.
    """
    scan = _Scan(text, at + 1)
    scan.skip(_invisible)
    if scan.next_in(_SLASH):
        scan.i += 1
        scan.skip(_invisible)
        return scan.i < scan.end and text[scan.i].isalpha()
    if not (scan.i < scan.end and text[scan.i].isalpha()):
        return False
    scan.skip(_name_char)
    spaced = scan.skip(_invisible)
    if scan.i == scan.end or scan.next_in(_GREATER) or scan.next_in(_SLASH):
        return True
    if not spaced or scan.skip(_name_char) == 0:
        return False
    scan.skip(_invisible)
    return scan.i < scan.end and text[scan.i] == "="


def neutralise(text: str) -> str:
    """Untrusted text with every tag-like `<` escaped, so nothing in it opens or closes a block.

    Lookalikes count: `< /issue>`, `<\u200b/issue>`, the fullwidth `\uff1c/issue\uff1e` and a fake
    opening `<issue origin="maintainer">` all become `<\\…`; a `<` before a digit, a space and an
    operand (`$a < $b`, `i<n;`), `<=` and `<?php` stay. One pass, linear in the text.
    """
    parts: list[str] = []
    last = 0
    for found in _LESS_FOUND.finditer(text):
        if _opens_markup(text, found.start()):
            parts += [text[last : found.start()], ESCAPED]
            last = found.end()
    if not parts:
        return text
    parts.append(text[last:])
    return "".join(parts)


def boundary(tag: str, origin: str, text: str, **attributes: str) -> str:
    """Wrap untrusted `text` in `<tag origin=...>`: the one fence for every prompt (Python and templates).

    Markup marks provenance for the model; it is no protection by itself (tool selection and path
    checks are), but text inside must not be able to end its block or pose as one of ours, so it
    passes `neutralise` and attribute values are escaped.
    """
    if not _TAG.match(tag):
        raise ValueError(f"bad boundary tag {tag!r}")
    attrs = "".join(f' {k}="{_attr(v)}"' for k, v in {"origin": origin, **attributes}.items())
    return f"<{tag}{attrs}>\n{neutralise(text)}\n</{tag}>"


def _fenced(tag: str, origin: str, caller: Callable[[], str]) -> str:
    """`{% call fenced("tag", "origin") %}…{% endcall %}`: a template's block through `boundary`."""
    return boundary(tag, origin, caller().strip("\n")) + "\n"


def _attr(value: str) -> str:
    return value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")
