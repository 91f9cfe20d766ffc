"""Cut the part of GitHub's GraphQL schema the product's queries use out of the published schema.

GitHub's GraphQL schema (1.2 MB) is published on npm as `@octokit/graphql-schema` (MIT, its
LICENSE.md is copied to tests/fixtures/forge-contract/LICENSE.octokit-graphql-schema). The excerpt
keeps, verbatim but without descriptions, directives and interfaces, the root fields, types and
fields the product's GraphQL documents select, with their arguments' input types and enums in full.
Run after changing a query, with the package's schema.graphql:

    npm pack @octokit/graphql-schema && tar xzf octokit-graphql-schema-*.tgz
    python -m tests.fakes.contract.graphql_excerpt package/schema.graphql

A query naming a field the published schema lacks fails here; the contract layer validates every
GraphQL request of the suite against the excerpt.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

from graphql import (
    DocumentNode,
    EnumTypeDefinitionNode,
    FieldNode,
    GraphQLSchema,
    InputObjectTypeDefinitionNode,
    ObjectTypeDefinitionNode,
    ScalarTypeDefinitionNode,
    TypeInfo,
    TypeInfoVisitor,
    Visitor,
    build_ast_schema,
    get_named_type,
    parse,
    print_ast,
    validate,
    visit,
)

from tests.fakes.contract import documents

EXCERPT = documents.ROOT / "tests" / "fixtures" / "forge-contract" / "github-graphql.excerpt.graphql"
PACKAGE = "@octokit/graphql-schema@15.26.1"


def product_documents() -> list[str]:
    """The GraphQL documents the product sends, as the SDK sends them."""
    from foundation.forge import github

    name = "resolveReviewThread"
    mutation = (f"mutation Mutation($input: {name[:1].upper()}{name[1:]}Input!) "
                f"{{ {name}(input: $input) {{ {github._RESOLVED} }} }}")
    return [github._THREADS, mutation]


class _Used(Visitor):
    def __init__(self, info: TypeInfo) -> None:
        super().__init__()
        self.info = info
        self.fields: set[tuple[str, str]] = set()
        self.types: set[str] = set()

    def enter_field(self, node: FieldNode, *_: object) -> None:
        parent = self.info.get_parent_type()
        field = self.info.get_field_def()
        if parent is None or field is None:
            return
        self.fields.add((parent.name, node.name.value))
        self.types.add(parent.name)
        self.types.add(get_named_type(field.type).name)
        for arg in field.args.values():
            self.types.add(get_named_type(arg.type).name)

    def enter_variable_definition(self, node: object, *_: object) -> None:
        kind = getattr(node, "type", None)
        while kind is not None and hasattr(kind, "type"):
            kind = kind.type
        if kind is not None:
            self.types.add(kind.name.value)


def _inputs_closure(full: GraphQLSchema, names: set[str]) -> set[str]:
    from graphql import GraphQLInputObjectType

    found, todo = set(names), list(names)
    while todo:
        kind = full.get_type(todo.pop())
        if isinstance(kind, GraphQLInputObjectType):
            for field in kind.fields.values():
                inner = get_named_type(field.type).name
                if inner not in found:
                    found.add(inner)
                    todo.append(inner)
    return found


def excerpt(schema_sdl: str, queries: list[str]) -> str:
    ast = parse(schema_sdl)
    # the published file defines two fields twice and deprecates some interface fields only on their
    # implementations: graphql-core refuses such a schema, so its own checks are skipped, the queries' kept
    full = build_ast_schema(ast, assume_valid_sdl=True)
    full._validation_errors = []  # type: ignore[attr-defined]
    used_fields: set[tuple[str, str]] = set()
    used_types: set[str] = set()
    for text in queries:
        document = parse(text)
        errors = validate(full, document)
        if errors:
            raise SystemExit(f"the published schema rejects a product query: {errors[0].message}")
        info = TypeInfo(full)
        used = _Used(info)
        visit(document, TypeInfoVisitor(info, used))
        used_fields |= used.fields
        used_types |= used.types
    used_types = _inputs_closure(full, used_types)
    kept = []
    for node in ast.definitions:
        name = getattr(getattr(node, "name", None), "value", "")
        if name not in used_types:
            continue
        if isinstance(node, ObjectTypeDefinitionNode):
            fields = tuple(_bare(f) for f in node.fields or () if (name, f.name.value) in used_fields)
            kept.append(ObjectTypeDefinitionNode(name=node.name, fields=fields, interfaces=(), directives=()))
        elif isinstance(node, InputObjectTypeDefinitionNode):
            fields = tuple(_bare(f) for f in node.fields or ())
            kept.append(InputObjectTypeDefinitionNode(name=node.name, fields=fields, directives=()))
        elif isinstance(node, EnumTypeDefinitionNode):
            values = tuple(_bare(v) for v in node.values or ())
            kept.append(EnumTypeDefinitionNode(name=node.name, values=values, directives=()))
        elif isinstance(node, ScalarTypeDefinitionNode):
            kept.append(ScalarTypeDefinitionNode(name=node.name, directives=()))
    header = (f"# Excerpt of GitHub's GraphQL schema ({PACKAGE}, MIT): the parts the product's queries use.\n"
              "# Written by `python -m tests.fakes.contract.graphql_excerpt`; do not edit.\n")
    return header + print_ast(DocumentNode(definitions=tuple(kept))) + "\n"


def _bare(node: Any) -> Any:
    """A field, argument or value without its description and directives."""
    changes: dict[str, Any] = {"description": None, "directives": ()}
    if getattr(node, "arguments", None):
        changes["arguments"] = tuple(_bare(a) for a in node.arguments)
    return dataclasses.replace(node, **changes)


if __name__ == "__main__":
    EXCERPT.write_text(excerpt(Path(sys.argv[1]).read_text(encoding="utf-8"), product_documents()), encoding="utf-8")
