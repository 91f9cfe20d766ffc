"""GitHub's GraphQL endpoint, checked against GitHub's own GraphQL schema.

The REST description does not cover `/graphql`, which the product uses for what REST cannot do (a
pull request's review threads, resolving one). Requests are parsed and validated against the
excerpt of GitHub's published schema (`graphql_excerpt`), variables coerced to the declared types;
answers are checked by executing the request's own query over the fake's `data`: a field of the
wrong type, a null where the schema says non-null, or a field the query did not select shows up as
a difference.
"""

from __future__ import annotations

import json
from functools import cache

import jsonschema
from graphql import GraphQLSchema, OperationDefinitionNode, build_schema, graphql_sync, parse, validate
from graphql.error import GraphQLError
from graphql.execution.values import get_variable_values

from tests.fakes.contract import github_rest
from tests.fakes.contract.graphql_excerpt import EXCERPT
from tests.fakes.contract.operations import Operation, decode, schema_check

WHERE = "github POST /graphql"
REQUEST = {"type": "object", "required": ["query"], "additionalProperties": False,
           "properties": {"query": {"type": "string"}, "variables": {"type": ["object", "null"]},
                          "operationName": {"type": ["string", "null"]}}}
ERRORS = {"type": "object", "anyOf": [{"required": ["data"]}, {"required": ["errors"]}],
          "properties": {"errors": {"type": "array", "items": {"type": "object", "required": ["message"]}}}}
OPERATION = Operation(forge="github", id="graphql", method="POST", template="/graphql")


@cache
def schema() -> GraphQLSchema:
    return build_schema(EXCERPT.read_text(encoding="utf-8"))


def operation_name(body: bytes) -> str:
    """`query repository` / `mutation resolveReviewThread`: the operation's kind and its root field."""
    value, _ = decode(body)
    try:
        document = parse(str(value.get("query", "")) if isinstance(value, dict) else "")
    except GraphQLError:
        return "unparsable"
    for node in document.definitions:
        if isinstance(node, OperationDefinitionNode) and node.selection_set.selections:
            root = node.selection_set.selections[0]
            return f"{node.operation.value} {root.name.value}"
    return "empty"


def check_request(body: bytes) -> list[str]:
    value, error = decode(body)
    if error:
        return [f"{WHERE}: request body {error}"]
    problems = [f"{WHERE}: {e.message}" for e in jsonschema.Draft4Validator(REQUEST).iter_errors(value)]
    if problems:
        return problems
    try:
        document = parse(value["query"])
    except GraphQLError as exc:
        return [f"{WHERE}: {exc.message}"]
    problems = [f"{WHERE}: {e.message}" for e in validate(schema(), document)]
    for node in document.definitions:
        if isinstance(node, OperationDefinitionNode) and not problems:
            coerced = get_variable_values(schema(), node.variable_definitions or (), value.get("variables") or {})
            if isinstance(coerced, list):
                problems += [f"{WHERE}: variables: {e.message}" for e in coerced]
    return problems


def check_response(request: bytes, status: int, answer: bytes) -> list[str]:
    value, error = decode(answer)
    if status != 200:  # a refusal or failure before GraphQL ran: GitHub's REST error body
        errors = [] if error else github_rest.error_check()(value)
        return [f"{WHERE} answered {status}: {p}" for p in ([f"body {error}"] if error else errors)]
    if error:
        return [f"{WHERE} answered {status}: body {error}"]
    problems = [f"{WHERE} answered: {p}" for p in schema_check(jsonschema.Draft4Validator(ERRORS))(value)]
    data = value.get("data") if isinstance(value, dict) else None
    if problems or data is None:
        return problems
    sent, _ = decode(request)
    result = graphql_sync(schema(), sent["query"], root_value=data, variable_values=sent.get("variables"))
    problems += [f"{WHERE} answered: {e.message} at {e.path}" for e in result.errors or ()]
    if not problems and result.data != data:
        problems.append(f"{WHERE} answered other fields than the query selected: "
                        f"{json.dumps(data)[:200]} against {json.dumps(result.data)[:200]}")
    return problems
