"""GitHub's REST contract: the operations of its official OpenAPI description, checked as documented.

The description is OpenAPI 3.0 (`nullable: true` rather than a `null` type), so schemas are
rewritten once into JSON Schema Draft 4 with `null` in the type, and every `#/components/...`
reference made absolute so that one registry serves all operations. Statuses an operation does not
document (a 401, a rate-limit 403/429, a 5xx) are checked against GitHub's generic error body,
`basic-error`, which every error answer of the REST API follows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

import jsonschema
import referencing
import referencing.jsonschema

from tests.fakes.contract import documents
from tests.fakes.contract.operations import NO_BODY, Check, Matcher, Operation, Param, schema_check

BASE = "urn:github-rest"
GENERIC_ERROR = "basic-error"
METHODS = ("get", "put", "post", "patch", "delete")
# Operations the product uses that the REST description leaves out, each with its reason. They are
# checked against the documented operation named here (same representation), and listed apart in
# docs/forges.md so the exception stays visible.
ALIASES = {
    # GitHub's own redirects for a renamed or transferred repository point at this path; it answers the
    # repository as `repos/get` does. The bot looks repositories up by their immutable id, so a rename
    # between the webhook and the worker cannot make it act on another repository.
    ("get", "/repositories/{repository_id}"): "repos/get",
}


def _convert(node: Any) -> Any:
    """OpenAPI 3.0 schema → JSON Schema Draft 4: `nullable` into the type, refs made absolute."""
    if isinstance(node, list):
        return [_convert(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: (BASE + v if k == "$ref" and isinstance(v, str) and v.startswith("#/") else _convert(v))
           for k, v in node.items()}
    if out.pop("nullable", False) is True:
        kind = out.get("type")
        if isinstance(kind, str):
            out["type"] = [kind, "null"]
            if "enum" in out and None not in out["enum"]:
                out["enum"] = [*out["enum"], None]
        elif kind is None:
            out = {"anyOf": [out, {"type": "null"}]}
    return out


@cache
def _registry() -> referencing.Registry[Any]:
    spec = documents.github_rest()
    converted = {"components": {"schemas": _convert(spec["components"]["schemas"])}}
    resource = referencing.Resource(converted, referencing.jsonschema.DRAFT4)
    registry: referencing.Registry[Any] = referencing.Registry().with_resource(BASE, resource)
    return registry


def _validator(schema: Mapping[str, Any]) -> Check:
    return schema_check(jsonschema.Draft4Validator(_convert(schema), registry=_registry()))


def _resolve(node: Mapping[str, Any]) -> Mapping[str, Any]:
    """A `#/components/...` reference of the description (parameters, responses) followed."""
    while "$ref" in node:
        found: Any = documents.github_rest()
        for part in str(node["$ref"]).removeprefix("#/").split("/"):
            found = found[part]
        node = found
    return node


def _json_schema(content: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    for media, entry in (content or {}).items():
        if media == "application/json" or media.endswith("+json"):
            schema: Mapping[str, Any] | None = entry.get("schema")
            return schema
    return None


def _response(entry: Mapping[str, Any]) -> Callable[[], Check | str | None]:
    resolved = _resolve(entry)
    schema = _json_schema(resolved.get("content"))
    if schema is None:
        return lambda: NO_BODY if not resolved.get("content") else None
    return lambda: _validator(schema)


def _operation(template: str, method: str, item: Mapping[str, Any], op_id: str | None = None) -> Operation:
    entry = item[method]
    params: dict[str, Param] = {}
    for raw in [*item.get("parameters", []), *entry.get("parameters", [])]:
        param = _resolve(raw)
        if param["in"] in ("path", "query"):
            params[param["name"]] = Param(param["name"], param["in"], _convert(param.get("schema", {})),
                                          bool(param.get("required")))
    op = Operation(forge="github", id=op_id or str(entry["operationId"]), method=method.upper(), template=template,
                   params=params)
    body = entry.get("requestBody")
    if body is not None:
        body_schema = _json_schema(body.get("content"))
        if body_schema is not None:
            op.body = lambda: _validator(body_schema)
            op.body_required = bool(body.get("required"))
    op.responses = {status: _response(resp) for status, resp in entry.get("responses", {}).items()}
    generic = {"$ref": f"#/components/schemas/{GENERIC_ERROR}"}
    for status in ("4XX", "5XX"):
        op.responses.setdefault(status, lambda: _validator(generic))
    return op


@cache
def error_check() -> Check:
    """GitHub's generic error body, `basic-error`."""
    return _validator({"$ref": f"#/components/schemas/{GENERIC_ERROR}"})


@cache
def operations() -> list[Operation]:
    spec = documents.github_rest()
    found = [_operation(template, method, item)
             for template, item in spec["paths"].items() for method in METHODS if method in item]
    by_id = {op.id: op for op in found}
    for (method, template), documented in ALIASES.items():
        target = by_id[documented]
        item = spec["paths"][target.template]
        alias = _operation(target.template, method, item, f"{documented} (by id)")
        alias.template = template
        alias.params = {k: v for k, v in alias.params.items() if k not in ("owner", "repo")}
        alias.params["repository_id"] = Param("repository_id", "path", {"type": "integer"}, True)
        found.append(alias)
    return found


@cache
def matcher() -> Matcher:
    # `contents/{path}` and `commits/{ref}`: a file path or a branch name may hold slashes
    return Matcher(operations(), greedy=("path", "ref"))
