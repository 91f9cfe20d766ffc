"""Operations (method + path template) with their request and response checks, and the matcher.

Both forges' contracts come down to the same thing: a list of operations, each with its path and
query parameters, a request body schema and a response schema per status. A request is matched to
exactly one operation by method and path (literal segments win over parameters, as a router would
pick); checks are compiled on first use and kept for the process, so a suite of thousands of
requests pays for each schema once.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

import jsonschema

Check = Callable[[Any], list[str]]  # a decoded JSON value -> the ways it breaks the contract
NO_BODY = "no-body"  # a documented response without content (204, 304)


def schema_check(validator: jsonschema.protocols.Validator) -> Check:
    """Errors of `validator` as short lines (JSON path and message), the cheap test first."""

    def check(value: Any) -> list[str]:
        if validator.is_valid(value):
            return []
        errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
        return [f"{_where(e.absolute_path)}: {_short(e.message)}" for e in errors[:5]]

    return check


def _where(path: Iterable[Any]) -> str:
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)


def _short(message: str) -> str:
    return message if len(message) < 300 else message[:300] + "…"


@dataclass(frozen=True)
class Param:
    name: str
    where: str  # "path" or "query"
    schema: Mapping[str, Any]
    required: bool = False


@dataclass
class Operation:
    """One documented operation; `responses` maps a status (or "default") to a lazily built check."""

    forge: str
    id: str
    method: str
    template: str
    params: dict[str, Param] = field(default_factory=dict)
    body: Callable[[], Check] | None = None
    body_required: bool = False
    responses: dict[str, Callable[[], Check | str | None]] = field(default_factory=dict)
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def segments(self) -> list[str]:
        return self.template.strip("/").split("/")

    def body_check(self) -> Check | None:
        if self.body is None:
            return None
        if "body" not in self._cache:
            self._cache["body"] = self.body()
        check: Check = self._cache["body"]
        return check

    def response_check(self, status: int) -> Check | str | None:
        """The check for `status`: a Check, NO_BODY, or None when the operation does not document it."""
        key = str(status) if str(status) in self.responses else f"{str(status)[0]}XX"
        if key not in self.responses:
            key = "default" if "default" in self.responses else ""
        if not key:
            return None
        if ("response", key) not in self._cache:
            self._cache[("response", key)] = self.responses[key]()
        found: Check | str | None = self._cache[("response", key)]
        return found


def coerce(raw: str, schema: Mapping[str, Any]) -> Any:
    """A query or path string as the JSON type its parameter schema names (left a string otherwise)."""
    kinds = schema.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    if "integer" in kinds:
        try:
            return int(raw)
        except ValueError:
            return raw
    if "boolean" in kinds and raw in ("true", "false"):
        return raw == "true"
    return raw


class Matcher:
    """Operations indexed by method and segment count; `greedy` last parameters may hold slashes."""

    def __init__(self, operations: Iterable[Operation], greedy: Iterable[str] = ()) -> None:
        self._index: dict[tuple[str, int], list[Operation]] = {}
        self._greedy: list[Operation] = []
        greedy_names = set(greedy)
        for op in operations:
            key = (op.method, len(op.segments))
            self._index.setdefault(key, []).append(op)
            last = op.segments[-1]
            if last.startswith("{") and last.strip("{}") in greedy_names:
                self._greedy.append(op)
        for ops in self._index.values():  # literal segments first, then the earlier literal wins
            ops.sort(key=lambda op: [s.startswith("{") for s in op.segments])

    def match(self, method: str, raw_path: str) -> tuple[Operation, dict[str, str]] | None:
        """The operation for `raw_path` (still percent-encoded: an encoded slash stays in its segment)."""
        parts = raw_path.strip("/").split("/")
        for op in self._index.get((method, len(parts)), []):
            found = _bind(op, op.segments, parts)
            if found is not None:
                return op, found
        for op in self._greedy:
            if op.method != method or len(parts) < len(op.segments):
                continue
            head = len(op.segments) - 1
            found = _bind(op, op.segments[:head], parts[:head])
            if found is not None:
                found[op.segments[-1].strip("{}")] = unquote("/".join(parts[head:]))
                return op, found
        return None


def _bind(op: Operation, template: list[str], parts: list[str]) -> dict[str, str] | None:
    bound: dict[str, str] = {}
    for want, got in zip(template, parts, strict=True):
        if want.startswith("{"):
            name = want.strip("{}")
            value = unquote(got)
            param = op.params.get(name)
            if not value or (param is not None and _wrong_type(value, param.schema)):
                return None
            bound[name] = value
        elif want != got:
            return None
    return bound


def _wrong_type(value: str, schema: Mapping[str, Any]) -> bool:
    kinds = schema.get("type")
    return kinds == "integer" and not value.isdigit()


def decode(body: bytes) -> tuple[Any, str]:
    """A JSON body decoded, or the reason it is not JSON."""
    try:
        return json.loads(body), ""
    except (ValueError, UnicodeDecodeError) as exc:
        return None, f"not JSON ({type(exc).__name__})"


_VALUE_VALIDATORS: dict[str, jsonschema.protocols.Validator] = {}


def value_errors(value: Any, schema: Mapping[str, Any]) -> list[str]:
    """A parameter value against its (small, self-contained) schema; validators kept per schema."""
    key = json.dumps(schema, sort_keys=True, default=str)
    validator = _VALUE_VALIDATORS.get(key)
    if validator is None:
        if "$ref" in key:
            return []
        validator = _VALUE_VALIDATORS[key] = jsonschema.Draft4Validator(dict(schema))
    return [] if validator.is_valid(value) else [e.message for e in validator.iter_errors(value)]
