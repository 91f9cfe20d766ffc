"""GitHub's GraphQL endpoint: outside the REST description, checked as a GraphQL request.

The product asks GraphQL for what REST cannot do (a pull request's review threads and resolving
one). A request must be a JSON object with a `query` string (and `variables` as an object); an
answer must be a JSON object with `data` and/or `errors`, as GraphQL over HTTP specifies.
"""

from __future__ import annotations

import re
from typing import Any

from tests.fakes.contract.operations import Operation, decode, schema_check

_NAMED = re.compile(r"^\s*(query|mutation)\b[^{(]*[({]")
_FIRST_FIELD = re.compile(r"{\s*(\w+)")
REQUEST = {"type": "object", "required": ["query"], "additionalProperties": False,
           "properties": {"query": {"type": "string"}, "variables": {"type": "object"},
                          "operationName": {"type": ["string", "null"]}}}
RESPONSE = {"type": "object", "anyOf": [{"required": ["data"]}, {"required": ["errors"]}],
            "properties": {"data": {"type": ["object", "null"]},
                           "errors": {"type": "array", "items": {"type": "object", "required": ["message"]}}}}


def _response() -> Any:
    import jsonschema

    return schema_check(jsonschema.Draft4Validator(RESPONSE))


OPERATION = Operation(forge="github", id="graphql", method="POST", template="/graphql",
                      responses={"200": _response})


def operation_name(body: bytes) -> str:
    """`query repository` / `mutation resolveReviewThread`: the kind and the first field asked for."""
    value, error = decode(body)
    query = value.get("query", "") if isinstance(value, dict) else ""
    kind = "mutation" if query.lstrip().startswith("mutation") else "query"
    field = _FIRST_FIELD.search(query)
    return f"{kind} {field.group(1) if field else '?'}"


def check_request(body: bytes) -> list[str]:
    import jsonschema

    value, error = decode(body)
    if error:
        return [f"github POST /graphql: request body {error}"]
    problems = [f"github POST /graphql: {e.message}" for e in jsonschema.Draft4Validator(REQUEST).iter_errors(value)]
    if not problems and not _NAMED.match(value["query"]) and not value["query"].lstrip().startswith("{"):
        problems.append("github POST /graphql: the query is not a GraphQL operation")
    return problems
