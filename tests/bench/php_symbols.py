"""A small tree-sitter-php symbol extractor for the benchmarks, used only when `graph.index.parse`
(issue 5) is not importable yet. It yields the shared `Symbol` records the chunker consumes."""

from __future__ import annotations

from collections.abc import Iterator

import tree_sitter_php
from tree_sitter import Language, Node, Parser

from graph.index.model import Symbol

_PARSER = Parser(Language(tree_sitter_php.language_php()))
_KINDS = {
    "class_declaration": "class",
    "interface_declaration": "interface",
    "trait_declaration": "trait",
    "enum_declaration": "enum",
    "method_declaration": "method",
    "function_definition": "function",
}


def _docblock(node: Node) -> str:
    prev = node.prev_named_sibling
    while prev is not None and prev.type == "attribute_list":
        prev = prev.prev_named_sibling
    if prev is not None and prev.type == "comment" and prev.text and prev.text.startswith(b"/**"):
        return prev.text.decode(errors="replace")
    return ""


def symbols(path: str, source: bytes) -> list[Symbol]:
    tree = _PARSER.parse(source)
    found: list[Symbol] = []

    def walk(node: Node, namespace: str, owner: str) -> Iterator[None]:
        for child in node.named_children:
            if child.type == "namespace_definition":
                name = child.child_by_field_name("name")
                namespace = name.text.decode() if name is not None and name.text else ""
                body = child.child_by_field_name("body")
                if body is not None:
                    yield from walk(body, namespace, owner)
                continue
            kind = _KINDS.get(child.type)
            name_node = child.child_by_field_name("name")
            if kind is None or name_node is None or name_node.text is None:
                yield from walk(child, namespace, owner)
                continue
            name = name_node.text.decode()
            base = f"{namespace}\\{name}" if namespace else name
            fqn = f"{owner}::{name}" if kind == "method" else base
            body = child.child_by_field_name("body")
            signature = source[child.start_byte : body.start_byte if body else child.end_byte]
            found.append(Symbol(
                kind=kind, fqn=fqn, name=name, path=path,  # type: ignore[arg-type]
                start_line=child.start_point[0] + 1, end_line=child.end_point[0] + 1,
                start_byte=child.start_byte, end_byte=child.end_byte,
                signature=signature.decode(errors="replace").strip(), docblock=_docblock(child),
                parent_fqn=owner if kind == "method" else "",
            ))
            if body is not None and kind != "method" and kind != "function":
                yield from walk(body, namespace, base)
        yield None

    for _ in walk(tree.root_node, "", ""):
        pass
    return found
