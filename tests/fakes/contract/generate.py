"""Hypothesis strategies for instances of a JSON schema (the webhook payload descriptions).

hypothesis-jsonschema would do this, but its last release (0.23.1) fails against the Hypothesis this
project uses (`'many' object has no attribute 'more'`), so this covers the subset GitHub's webhook
schemas use: `$ref`, `allOf` (merged), `anyOf`/`oneOf`, type lists with `null`, `enum`, `const`,
objects (every optional property may be absent), arrays, strings by format, numbers. Nesting deeper
than `DEPTH` keeps only required properties, so a payload stays a payload and not a tree of every
optional object the schema allows. Callers check what they got against the schema itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from hypothesis import strategies as st

DEPTH = 3
Resolve = Callable[[str], Mapping[str, Any]]
_TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=12)
_FORMATS: dict[str, st.SearchStrategy[str]] = {
    "date-time": st.datetimes().map(lambda d: d.strftime("%Y-%m-%dT%H:%M:%SZ")),
    "uri": st.from_regex(r"https://example\.com/[a-z0-9/]{0,12}", fullmatch=True),
    "uri-template": st.just("https://api.example.com/x{/y}"),
    "email": st.just("someone@example.com"),
    "date": st.dates().map(str),
}


def _merge(parts: list[Mapping[str, Any]], resolve: Resolve) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for part in parts:
        part = _deref(part, resolve)
        if "allOf" in part:
            part = {**{k: v for k, v in part.items() if k != "allOf"}, **_merge(part["allOf"], resolve)}
        for key, value in part.items():
            if key == "properties":
                props = merged.setdefault("properties", {})
                for name, sub in value.items():
                    props[name] = {"allOf": [props[name], sub]} if name in props else sub
            elif key == "required":
                merged["required"] = sorted({*merged.get("required", []), *value})
            elif key == "type" and "type" in merged:  # both apply: only the types both allow
                mine = merged["type"] if isinstance(merged["type"], list) else [merged["type"]]
                theirs = value if isinstance(value, list) else [value]
                both = [kind for kind in mine if kind in theirs] or mine
                merged["type"] = both if len(both) > 1 else both[0]
            else:
                merged.setdefault(key, value)
    return merged


def _deref(schema: Mapping[str, Any], resolve: Resolve) -> Mapping[str, Any]:
    while "$ref" in schema:
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        schema = {**resolve(str(schema["$ref"])), **rest}
    return schema


def strategy(schema: Mapping[str, Any], resolve: Resolve, depth: int = 0) -> st.SearchStrategy[Any]:
    schema = _deref(schema, resolve)
    if "allOf" in schema:
        schema = _merge([{k: v for k, v in schema.items() if k != "allOf"}, *schema["allOf"]], resolve)
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(list(schema["enum"]))
    for key in ("oneOf", "anyOf"):
        if key in schema:
            base = {k: v for k, v in schema.items() if k != key}
            return st.one_of([strategy(_merge([base, option], resolve), resolve, depth) for option in schema[key]])
    kinds = schema.get("type")
    if isinstance(kinds, list):
        return st.one_of([strategy({**schema, "type": kind}, resolve, depth) for kind in kinds])
    if kinds == "object" or (kinds is None and "properties" in schema):
        return _object(schema, resolve, depth)
    if kinds == "array":
        items = schema.get("items") or {}
        low = int(schema.get("minItems", 0))
        return st.lists(strategy(items, resolve, depth + 1), min_size=low, max_size=max(low, 2 if depth < DEPTH else 0))
    return _scalar(schema, kinds)


def _object(schema: Mapping[str, Any], resolve: Resolve, depth: int) -> st.SearchStrategy[Any]:
    props: Mapping[str, Any] = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    fixed = {name: strategy(sub, resolve, depth + 1) for name, sub in props.items() if name in required}
    optional = {} if depth >= DEPTH else {
        name: strategy(sub, resolve, depth + 1) for name, sub in props.items() if name not in required}
    return st.fixed_dictionaries(fixed, optional=optional)


def _scalar(schema: Mapping[str, Any], kind: Any) -> st.SearchStrategy[Any]:
    if kind == "null":
        return st.none()
    if kind == "boolean":
        return st.booleans()
    if kind == "integer":
        # ids and numbers are positive on both forges; 0 is rarely a meaningful value to test with
        return st.integers(min_value=schema.get("minimum", 1), max_value=schema.get("maximum", 2**31))
    if kind == "number":
        return st.floats(min_value=0, max_value=1e6, allow_nan=False)
    if kind == "string":
        if "pattern" in schema:
            return st.from_regex(str(schema["pattern"]), fullmatch=True)
        low = int(schema.get("minLength", 0))
        return _FORMATS.get(str(schema.get("format")), _TEXT).filter(lambda s: len(s) >= low)
    return st.none() | st.booleans() | st.integers() | _TEXT  # no type: any JSON value
