"""The `FORGEBOT_*` variables: where each one lands in the settings, and what is wrong with it.

pydantic-settings reports a bad value as a multi-line traceback that names a field path
(`llm.provider`), stops at the first variable holding malformed JSON, and ignores a misspelt
variable without a word. An operator needs the opposite: one line per variable, in the name they
typed, with the values it accepts, and a word about every name that does nothing. Each variable
is checked on its own against the type of the setting it lands in, so one bad value hides no
other; what only the whole model can judge (a setting that needs another) is translated from the
model's own errors.
"""

from __future__ import annotations

import difflib
import json
import types
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, SecretStr, TypeAdapter, ValidationError

PREFIX = "FORGEBOT_"
DELIMITER = "__"
# read by the test scripts and CI, not by the settings: they must not be reported as misspelt
NOT_SETTINGS = frozenset({"FORGEBOT_SECRETS_DIR", "FORGEBOT_REQUIRE_TOOLS", "FORGEBOT_TEST_WORKERS"})
_SHOWN = 40  # characters of a rejected value echoed back (secrets never are)


def model_of(annotation: Any) -> type[BaseModel] | None:
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def dict_value(annotation: Any) -> Any | None:
    """The value type of a `dict[str, V]` annotation, else None."""
    return typing.get_args(annotation)[1] if typing.get_origin(annotation) is dict else None


def strip_optional(annotation: Any) -> Any:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


def is_json(annotation: Any) -> bool:
    """Whether pydantic-settings reads this setting's variable as JSON (models and containers)."""
    inner = strip_optional(annotation)
    return model_of(inner) is not None or typing.get_origin(inner) in (dict, list, tuple, set, frozenset)


def holds_secret(annotation: Any) -> bool:
    """Whether a value of this type may carry a secret anywhere inside (never echo it back)."""
    inner = strip_optional(annotation)
    nested = model_of(inner)
    if nested is not None:
        return any(holds_secret(field.annotation) for field in nested.model_fields.values())
    return inner is SecretStr or any(holds_secret(arg) for arg in typing.get_args(inner))


@dataclass(frozen=True)
class Slot:
    """Where one variable lands: the type its value must have."""

    annotation: Any
    metadata: tuple[Any, ...] = ()

    @property
    def secret(self) -> bool:
        return holds_secret(self.annotation)

    def adapter(self) -> TypeAdapter[Any]:
        annotation: Any = Annotated[(self.annotation, *self.metadata)] if self.metadata else self.annotation
        return TypeAdapter(annotation)


@dataclass(frozen=True)
class Miss:
    """A variable name the settings do not know: the part that matched, and the names that would."""

    known: tuple[str, ...]  # the variable's segments up to the first unknown one
    choices: tuple[str, ...]  # the valid segments at that point


def locate(model: type[BaseModel], name: str) -> Slot | Miss:
    """The slot behind `FORGEBOT_A__B__C` (case-insensitive, as pydantic-settings reads it)."""
    parts = name[len(PREFIX):].lower().split(DELIMITER)
    slot = Slot(model)
    for index, part in enumerate(parts):
        inner = strip_optional(slot.annotation)
        values = dict_value(inner)
        if values is not None:  # any key names an entry (a role, a database)
            slot = Slot(values)
            continue
        node_model = model_of(inner)
        if node_model is None or part not in node_model.model_fields:
            choices = tuple(node_model.model_fields) if node_model is not None else ()
            return Miss(tuple(parts[:index]), choices)
        field = node_model.model_fields[part]
        slot = Slot(field.annotation, tuple(field.metadata))
    return slot


def leaf_names(model: type[BaseModel], prefix: str = PREFIX) -> Iterator[str]:
    """Every leaf variable name (a dict's key as `<KEY>`), for suggestions."""
    for name, field in model.model_fields.items():
        env = f"{prefix}{name.upper()}"
        nested, values = model_of(strip_optional(field.annotation)), dict_value(strip_optional(field.annotation))
        if nested is not None:
            yield from leaf_names(nested, env + DELIMITER)
        elif values is not None and model_of(values) is not None:
            yield from leaf_names(model_of(values), f"{env}{DELIMITER}<KEY>{DELIMITER}")  # type: ignore[arg-type]
        else:
            yield env


def _suggestion(model: type[BaseModel], name: str, miss: Miss) -> str | None:
    tail = name[len(PREFIX):].lower().split(DELIMITER)[len(miss.known):]
    close = difflib.get_close_matches(tail[0], miss.choices, n=1, cutoff=0.75) if tail else []
    if close:
        head = name[: len(PREFIX)] + DELIMITER.join([*miss.known, close[0], *tail[1:]])
        return head.upper()
    whole = difflib.get_close_matches(name.upper(), list(leaf_names(model)), n=1, cutoff=0.85)
    return whole[0] if whole else None


def unknown_names(model: type[BaseModel], environ: Mapping[str, str]) -> list[str]:
    """The `FORGEBOT_*` variables no setting reads, sorted."""
    return [name for name in sorted(environ)
            if name.upper().startswith(PREFIX) and name.upper() not in NOT_SETTINGS
            and isinstance(locate(model, name), Miss)]


def unknown(model: type[BaseModel], environ: Mapping[str, str]) -> list[str]:
    """One line per `FORGEBOT_*` variable no setting reads, with the likely intended name."""
    lines = []
    for name in unknown_names(model, environ):
        found = locate(model, name)
        assert isinstance(found, Miss)  # unknown_names keeps only those
        guess = _suggestion(model, name, found)
        hint = f"did you mean {guess}?" if guess else "docs/configuration.md lists every setting"
        lines.append(f"{name} is not a forgebot setting and is ignored ({hint})")
    return lines


def _expected(error: Any) -> str:
    """What the value should have been, in the operator's words."""
    kind, ctx = error.get("type", ""), error.get("ctx") or {}
    if kind == "literal_error":
        return f"allowed values: {ctx.get('expected', '')}".replace("'", "")
    words = {
        "int_parsing": "a whole number", "int_type": "a whole number", "int_from_float": "a whole number",
        "float_parsing": "a number", "float_type": "a number",
        "bool_parsing": "true or false (also 1/0, yes/no, on/off)", "bool_type": "true or false",
        "url_parsing": "a URL", "string_type": "a string",
    }
    if kind in words:
        return f"expected {words[kind]}"
    return str(error.get("msg", "invalid")).removeprefix("Value error, ").replace("Input should", "should")


def _value(raw: str, slot: Slot) -> str:
    if slot.secret:
        return "(secret value)"
    shown = raw if len(raw) <= _SHOWN else raw[:_SHOWN] + "…"
    return repr(shown)


def _where(error: Any) -> str:
    """The part of a JSON value an error is about (`coder.temperature: `), if any."""
    inner = [str(part) for part in error.get("loc", ())]
    return f"{'.'.join(inner)}: " if inner else ""


def check(raw: str, slot: Slot) -> str | None:
    """What is wrong with one variable's value, or None when its setting accepts it."""
    value: Any = raw
    if is_json(slot.annotation):
        try:
            value = json.loads(raw)
        except ValueError:
            inner = strip_optional(slot.annotation)
            if dict_value(inner) is not None or model_of(inner) is not None:
                return 'expected a JSON object such as {"key": "value"}'
            return 'expected a JSON list such as ["a", "b"]'
    try:
        slot.adapter().validate_python(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        return _where(first) + _expected(first)
    return None


def invalid(model: type[BaseModel], environ: Mapping[str, str]) -> list[str]:
    """One line per `FORGEBOT_*` variable whose value its setting refuses, naming what it accepts."""
    lines = []
    for name in sorted(environ):
        if not name.upper().startswith(PREFIX) or name.upper() in NOT_SETTINGS:
            continue
        slot = locate(model, name)
        if isinstance(slot, Slot):
            problem = check(environ[name], slot)
            if problem is not None:
                lines.append(f"{name}={_value(environ[name], slot)} is not valid: {problem}")
    return lines


def explain(error: ValidationError, environ: Mapping[str, str], secrets_dir: Path | None) -> list[str]:
    """The whole model's errors (a setting that needs another), each under the variable or secret
    file that set it."""
    present = {name.upper(): name for name in environ}
    lines = []
    for item in error.errors():
        loc = [str(part) for part in item.get("loc", ())]
        where = f"{PREFIX}{DELIMITER.join(loc).upper()}"
        if item.get("type") == "value_error":  # a rule over several settings of one section
            where += f"{DELIMITER}*"
        for depth in range(len(loc), 0, -1):
            candidate = f"{PREFIX}{DELIMITER.join(loc[:depth]).upper()}"
            if candidate in present:
                where = present[candidate]
                break
            file = secrets_dir / DELIMITER.join(loc[:depth]) if secrets_dir is not None else None
            if file is not None and file.is_file():
                where = f"secret file {file}"
                break
        lines.append(f"{where}: {_expected(item)}")
    return lines
