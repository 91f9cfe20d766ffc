"""Prompt templates as files, rendered strictly; `catalog.toml` declares each one.

`render(name, **vars)` loads `prompts/<file>` with StrictUndefined, so a missing variable is an
error at render time, never an empty string in a prompt.
"""

from __future__ import annotations

import re
import tomllib
from functools import cache
from importlib import resources
from typing import Any, Literal

import jinja2
from pydantic import BaseModel, ConfigDict

__all__ = ["Catalog", "PromptSpec", "boundary", "catalog", "environment", "render", "terms", "untrusted"]


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


def untrusted(text: object) -> str:
    """Jinja filter for data inside a boundary: no closing tag in it can end the boundary early."""
    return str(text).replace("</", "<\\/")


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
    env.filters["untrusted"] = untrusted
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


def boundary(tag: str, origin: str, text: str, **attributes: str) -> str:
    """Wrap untrusted `text` in `<tag origin=...>`; a closing tag inside the text cannot end it early.

    Markup marks provenance for the model; it is no protection by itself (tool selection and path
    checks are), but a file that contains `</file>` must not be able to pose as our own text.
    """
    if not _TAG.match(tag):
        raise ValueError(f"bad boundary tag {tag!r}")
    attrs = "".join(f' {k}="{_attr(v)}"' for k, v in {"origin": origin, **attributes}.items())
    safe = re.sub(rf"</\s*{tag}\b", f"<\\/{tag}", text, flags=re.IGNORECASE)
    return f"<{tag}{attrs}>\n{safe}\n</{tag}>"


def _attr(value: str) -> str:
    return value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")
