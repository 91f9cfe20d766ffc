"""Vue components' script blocks, read in place (`project.index.sfc`)."""

from __future__ import annotations

from project.index.sfc import script_blocks

COMPONENT = (
    b'<script lang="ts" setup generic="T extends Map<string, number>">\n'
    b'import { useCart } from "./cart";\n'
    b"const total = useCart();\n"
    b"</script>\n\n"
    b"<template>\n  <!-- <script>alert(1)</script> -->\n  <p>{{ total }}</p>\n</template>\n\n"
    b"<script>\nexport default { name: 'Cart' };\n</SCRIPT >\n"
    b"<style>\np > a { color: red; }\n</style>\n"
)


def test_only_the_script_blocks_stay_each_byte_where_it_was() -> None:
    kept = script_blocks(COMPONENT)
    assert len(kept) == len(COMPONENT) and kept.count(b"\n") == COMPONENT.count(b"\n")
    lines = kept.decode().split("\n")
    assert lines[1] == 'import { useCart } from "./cart";'  # after an opening tag whose attribute holds `>`
    assert lines[2] == "const total = useCart();"
    assert lines[11] == "export default { name: 'Cart' };"  # the second block, closed in capitals
    assert "alert" not in kept.decode()  # a block inside an HTML comment is not a block
    assert "color" not in kept.decode() and "template" not in kept.decode() and "script" not in kept.decode()


def test_a_block_never_closed_runs_to_the_end() -> None:
    assert script_blocks(b"<script>\nlet a = 1;\n").decode() == "        \nlet a = 1;\n"
    assert script_blocks(b"<template><p/></template>\n") == b" " * 25 + b"\n"
