"""What a checkout's tsconfig.json, jsconfig.json and package.json files make its bare imports name.

Each case is a layout real repositories use (vuejs/core maps `@vue/*` to `packages/*/src`; applications
map `@/*` to `src/*`; monorepos extend a base configuration and name their packages); the answer is
read from files written to a temporary checkout, as a build reads them.
"""

from __future__ import annotations

import json
from pathlib import Path

from project.index.aliases import MAX_CONFIG_BYTES, Aliases, configuration_files, read_aliases
from project.index.script_graph import module_name, resolve_specifier


def _checkout(root: Path, files: dict[str, str]) -> Aliases:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    listed = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    modules = [module_name(p) for p in listed if p.endswith((".ts", ".tsx", ".js", ".mjs"))]
    return read_aliases(root, configuration_files(root), modules)


def test_wildcard_and_exact_paths_as_typescript_orders_them(tmp_path: Path) -> None:
    aliases = _checkout(tmp_path, {
        "tsconfig.json": json.dumps({"compilerOptions": {"paths": {
            "@vue/*": ["./packages/*/src"], "@vue/compat": ["./packages/vue-compat/src"], "vue": ["packages/vue/src"],
        }}}),
        "packages/shared/src/index.ts": "", "packages/vue-compat/src/index.ts": "", "packages/vue/src/index.ts": "",
        "packages/compat/src/index.ts": "",
    })
    assert aliases.resolve("packages/vue/src/a.ts", "@vue/shared") == "packages/shared/src"
    assert aliases.resolve("x.ts", "@vue/compat") == "packages/vue-compat/src"  # the exact pattern first
    assert aliases.resolve("x.ts", "vue") == "packages/vue/src"
    assert aliases.resolve("x.ts", "@vue/missing") == ""  # no such module here: left as written
    assert resolve_specifier("x.ts", "@vue/missing", aliases) == "@vue/missing"
    assert resolve_specifier("x.ts", "./y", aliases) == "y"  # relative specifiers never look at aliases


def test_comments_trailing_commas_extends_and_base_url(tmp_path: Path) -> None:
    """`paths` inherited from a base configuration resolve against the base's `baseUrl`; `//` inside a
    string is not a comment."""
    aliases = _checkout(tmp_path, {
        "tsconfig.base.json": '{\n  // shared by every app\n  "compilerOptions": {"baseUrl": "libs", '
                              '"paths": {"@lib/*": ["*/src"],}, "outDir": "http://x/y",},\n}',
        "apps/web/tsconfig.json": '{"extends": "../../tsconfig.base", /* own options */ "compilerOptions": {}}',
        "apps/web/main.ts": "", "libs/ui/src/index.ts": "", "libs/ui/src/button.tsx": "",
    })
    assert aliases.resolve("apps/web/main.ts", "@lib/ui") == "libs/ui/src"
    assert aliases.resolve("tools/x.ts", "@lib/ui") == ""  # a base file applies through the ones extending it
    assert aliases.skipped == ()


def test_the_nearest_configuration_applies(tmp_path: Path) -> None:
    aliases = _checkout(tmp_path, {
        "apps/a/tsconfig.json": '{"compilerOptions": {"paths": {"@/*": ["src/*"]}}}',
        "apps/b/jsconfig.json": '{"compilerOptions": {"baseUrl": ".", "paths": {"@/*": ["lib/*"]}}}',
        "apps/a/src/util.ts": "", "apps/b/lib/util.js": "",
    })
    assert aliases.resolve("apps/a/src/main.ts", "@/util") == "apps/a/src/util"
    assert aliases.resolve("apps/b/lib/main.js", "@/util.js") == "apps/b/lib/util"  # an ESM `.js` spelling
    assert aliases.resolve("elsewhere.ts", "@/util") == ""


def test_workspace_packages_by_name(tmp_path: Path) -> None:
    aliases = _checkout(tmp_path, {
        "package.json": '{"name": "monorepo", "workspaces": ["packages/*"]}',
        "packages/core/package.json": '{"name": "@acme/core", "main": "dist/index.js"}',
        "packages/core/src/index.ts": "", "packages/core/src/http/client.ts": "",
        "packages/plain/package.json": '{"name": "plain", "module": "lib/entry.mjs"}',
        "packages/plain/lib/entry.mjs": "",
        "node_modules/left-pad/package.json": '{"name": "left-pad"}', "node_modules/left-pad/index.js": "",
    })
    assert aliases.resolve("a.ts", "@acme/core") == "packages/core/src"  # its source, not its build output
    assert aliases.resolve("a.ts", "@acme/core/src/http/client") == "packages/core/src/http/client"
    assert aliases.resolve("a.ts", "plain") == "packages/plain/lib/entry"
    assert aliases.resolve("a.ts", "left-pad") == ""  # an installed dependency is not the checkout's


def test_hostile_configuration_adds_nothing_and_is_named(tmp_path: Path) -> None:
    """Configuration is repository content: a link out of the checkout is not read, an oversized or
    unparsable file is skipped with its reason, targets outside the checkout map nothing."""
    outside = tmp_path / "host.json"
    outside.write_text('{"compilerOptions": {"paths": {"@x/*": ["src/*"]}}}')
    root = tmp_path / "repo"
    (root / "linked").mkdir(parents=True)
    (root / "linked" / "tsconfig.json").symlink_to(outside)
    aliases = _checkout(root, {
        "deep/tsconfig.json": "[" * 200_000,
        "big/tsconfig.json": '{"x": "' + "a" * MAX_CONFIG_BYTES + '"}',
        "escape/tsconfig.json": '{"compilerOptions": {"paths": {"@e/*": ["../../*", "/etc/*"]}}}',
        "loop/tsconfig.json": '{"extends": "./tsconfig.json", "compilerOptions": {"paths": {"@l/*": ["*"]}}}',
        "src/a.ts": "", "linked/src/a.ts": "", "loop/a.ts": "",
    })
    reasons = "\n".join(aliases.skipped)
    assert "linked/tsconfig.json: a link to outside the checkout" in reasons
    assert "deep/tsconfig.json: RecursionError" in reasons
    assert f"big/tsconfig.json: over {MAX_CONFIG_BYTES} bytes" in reasons
    assert aliases.resolve("linked/src/b.ts", "@x/a") == ""
    assert aliases.resolve("escape/b.ts", "@e/src/a") == ""
    assert aliases.resolve("loop/b.ts", "@l/a") == "loop/a"  # a configuration extending itself ends


def test_the_record_round_trips(tmp_path: Path) -> None:
    aliases = _checkout(tmp_path, {"tsconfig.json": '{"compilerOptions": {"paths": {"~/*": ["src/*"]}}}',
                                   "src/a.ts": ""})
    again = Aliases.loads(aliases.dumps())
    assert again.resolve("src/b.ts", "~/a") == "src/a" and again.digest() == aliases.digest() != ""
    assert Aliases.loads("").resolve("x.ts", "~/a") == ""
