"""Vue and Svelte components, read in place as TypeScript (`project.index.sfc`)."""

from __future__ import annotations

from project.index.sfc import MARKUP, readable

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
    kept = readable(COMPONENT)
    assert len(kept) == len(COMPONENT) and kept.count(b"\n") == COMPONENT.count(b"\n")
    lines = kept.decode().split("\n")
    assert lines[1] == 'import { useCart } from "./cart";'  # after an opening tag whose attribute holds `>`
    assert lines[2] == "const total = useCart();"
    assert lines[11] == "export default { name: 'Cart' };"  # the second block, closed in capitals
    assert "alert" not in kept.decode()  # a block inside an HTML comment is not a block
    assert "color" not in kept.decode() and "template" not in kept.decode() and "script" not in kept.decode()


def test_a_block_never_closed_runs_to_the_end() -> None:
    assert readable(b"<script>\nlet a = 1;\n").decode() == "        \nlet a = 1;\n"
    assert readable(b"<template><p/></template>\n") == b" " * 25 + b"\n"


def test_a_vue_templates_expressions_are_statements_where_they_are_written() -> None:
    template = (b'<template>\n  <li v-for="(item, i) of visible(items)" :key="item.id" @click="select(item)">\n'
                b"    {{ label(item) }} and {{ { a: 1 }.a }}\n  </li>\n  <!-- {{ hidden() }} -->\n</template>\n"
                b"<style>\n.a { color: red; }\n</style>\n")
    kept = readable(template, MARKUP["vue"])
    assert len(kept) == len(template)
    lines = kept.decode().split("\n")
    assert lines[1].split() == [";(visible(items))", ";(item.id)", ";(select(item))"]  # v-for reads its list
    assert lines[2].split() == [";(", "label(item)", ")", ";(", "{", "a:", "1", "}.a", ")"]
    assert "hidden" not in kept.decode() and "color" not in kept.decode()


def test_a_svelte_markups_expressions_and_tags_are_statements() -> None:
    markup = (b"<script>\n  let open = false;\n</script>\n\n"
              b'{#if ready(open)}\n  <p class={cn("a", `b-${size}`)} {...rest}>{format(date)}</p>\n'
              b"{:else}\n  {#each rows(list) as row (row.id)}{@render cell(row)}{/each}\n{/if}\n"
              b"<style>\np { margin: 0; }\n</style>\n")
    kept = readable(markup, MARKUP["svelte"]).decode()
    lines = kept.split("\n")
    assert lines[1] == "  let open = false;"
    assert lines[4].split() == [";(ready(open))"]
    assert lines[5].split() == [';(cn("a",', '`b-${size}`))', ";(rest);(format(date))"]
    assert lines[7].split() == [";(rows(list))", ";(cell(row))"]
    assert "else" not in kept and "margin" not in kept and "each" not in kept


def test_a_comment_opened_in_a_script_is_the_scripts_text() -> None:
    """`"<!--"` in a script's string opened an HTML comment to the end of the file: the next block and
    every template expression after it were not read."""
    component = (b'<script>\nconst marker = "<!--";\n</script>\n<template>\n  <p>{{ shown() }}</p>\n</template>\n'
                 b"<script setup>\nconst later = 1;\n</script>\n")
    lines = readable(component, MARKUP["vue"]).decode().split("\n")
    assert lines[1] == 'const marker = "<!--";'
    assert lines[4].split() == [";(", "shown()", ")"]
    assert lines[7] == "const later = 1;"


def test_a_line_break_inside_a_tag_stays_where_it_is() -> None:
    """`{#if\\ncond}` and `v-for="item in\\nitems"`: the parenthesis went on the line break, and every later
    definition's line was off by one."""
    svelte = b"{#if\nready(x)}<p/>{/if}\n{#each\nrows(y) as\nrow}{/each}\n"
    vue = b'<template>\n  <li v-for="item in\nitems(z)" />\n</template>\n'
    for source, markup, expected in ((svelte, "svelte", ["ready(x))", "rows(y))"]), (vue, "vue", ["items(z))"])):
        kept = readable(source, MARKUP[markup])
        assert [i for i, c in enumerate(kept) if c == 10] == [i for i, c in enumerate(source) if c == 10]
        assert [word for word in kept.decode().split() if word not in ("(", ";(")] == expected
