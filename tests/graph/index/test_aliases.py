"""What a checkout's tsconfig.json, jsconfig.json and package.json files make its bare imports name.

Each case is a layout real repositories use (vuejs/core maps `@vue/*` to `packages/*/src`; applications
map `@/*` to `src/*`; monorepos extend a base configuration and name their packages); the answer is
read from files written to a temporary checkout, as a build reads them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from project.index.aliases import MAX_CONFIG_BYTES, Aliases, is_configuration, read_aliases
from project.index.extractors import extractor_for
from project.index.index_cli import list_files
from project.index.script_graph import resolve_specifier


def _checkout(root: Path, files: dict[str, str]) -> Aliases:
    """The aliases a build of `files` reads: configuration and sources listed as `forgebot index` lists
    them (a walk that skips `node_modules`, as outside a git checkout)."""
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    listed = list_files(root)
    return read_aliases(root, [p for p in listed if is_configuration(p)], [p for p in listed if extractor_for(p)])


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


def test_base_url_alone_roots_bare_specifiers(tmp_path: Path) -> None:
    """`"baseUrl": "src"` without `paths` (older React applications): `components/Button` is
    src/components/Button; a package the checkout does not hold stays outside."""
    aliases = _checkout(tmp_path, {
        "jsconfig.json": '{"compilerOptions": {"baseUrl": "src"}}',
        "src/components/Button.jsx": "", "src/index.js": "",
    })
    assert aliases.resolve("src/index.js", "components/Button") == "src/components/Button"
    assert aliases.resolve("src/index.js", "react") == ""


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


def test_package_exports_name_the_sources_they_export(tmp_path: Path) -> None:
    """Turborepo's internal packages (create-t3-turbo's `@acme/ui/button`, `@acme/db/client`) export their
    sources by subpath, with conditions whose first targets are built files the checkout does not hold."""
    aliases = _checkout(tmp_path, {
        "packages/ui/package.json": json.dumps({"name": "@acme/ui", "exports": {
            ".": "./src/index.ts", "./button": "./src/button.tsx", "./gone": "./src/gone.ts"}}),
        "packages/ui/src/index.ts": "", "packages/ui/src/button.tsx": "",
        "packages/db/package.json": json.dumps({"name": "@acme/db", "exports": {
            ".": {"types": "./dist/index.d.ts", "default": "./src/index.ts"},
            "./client": {"types": "./dist/client.d.ts", "default": "./src/client.ts"}}}),
        "packages/db/src/index.ts": "", "packages/db/src/client.ts": "",
        "packages/kit/package.json": json.dumps({"name": "kit", "exports": {"./*": "./lib/*.ts", "./x": "../x.ts"}}),
        "packages/kit/lib/a.ts": "", "packages/kit/lib/deep/b.ts": "", "x.ts": "",
        "packages/one/package.json": json.dumps({"name": "one", "exports": {"import": ["./nope.js", "./main.ts"]}}),
        "packages/one/main.ts": "", "packages/one/src/index.ts": "",
        "index.ts": "",  # a module the checkout's root is: no package's entry by default
        "packages/bare/package.json": json.dumps({"name": "bare", "exports": {"./x": {"a": {"b": {"c": 1}}}}}),
    })
    assert aliases.resolve("apps/web/page.tsx", "@acme/ui") == "packages/ui/src"
    assert aliases.resolve("apps/web/page.tsx", "@acme/ui/button") == "packages/ui/src/button"
    assert aliases.resolve("apps/web/page.tsx", "@acme/ui/gone") == ""  # exported, not in the checkout
    assert aliases.resolve("apps/web/page.tsx", "@acme/db") == "packages/db/src"
    assert aliases.resolve("apps/web/page.tsx", "@acme/db/client") == "packages/db/src/client"
    assert aliases.resolve("a.ts", "kit/a") == "packages/kit/lib/a"
    assert aliases.resolve("a.ts", "kit/deep/b") == "packages/kit/lib/deep/b"
    assert aliases.resolve("a.ts", "kit/x") == ""  # a target outside the package's directory: not followed
    assert aliases.resolve("a.ts", "one") == "packages/one/main"  # the array's first target in the checkout
    assert aliases.resolve("a.ts", "bare") == ""


def test_a_hostile_exports_map_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every `./aN/*` of a map naming every module of the checkout once more: the package names at most
    `MAX_EXPORTED` subpaths (the record of a build holds them all), and `..` targets name nothing."""
    monkeypatch.setattr("project.index.aliases.MAX_EXPORTED", 50)
    files = {f"src/m{i}.ts": "" for i in range(20)}
    files["packages/evil/package.json"] = json.dumps({"name": "evil", "exports": {
        **{f"./a{i}/*": "./../../src/*.ts" for i in range(100)}, **{f"./b{i}/*": "./*.ts" for i in range(100)},
        "./up": "./../../src/m1.ts"}})
    files["packages/evil/lib.ts"] = ""
    aliases = _checkout(tmp_path, files)
    named = [key for key in aliases.packages if key.startswith("evil/")]
    assert 0 < len(named) <= 50 + 1  # the cap, and the package's own `lib` by path
    assert aliases.resolve("a.ts", "evil/up") == ""  # `..` in a target: Node refuses it too


def test_hostile_configuration_adds_nothing_and_is_named(tmp_path: Path) -> None:
    """Configuration is repository content: a link out of the checkout is not read, an oversized or
    unparsable file is skipped with its reason, targets outside the checkout map nothing."""
    outside = tmp_path / "host.json"
    outside.write_text('{"compilerOptions": {"paths": {"@x/*": ["src/*"]}}}')
    root = tmp_path / "repo"
    (root / "linked").mkdir(parents=True)
    (root / "linked" / "tsconfig.json").symlink_to(outside)
    _checkout(root, {
        "deep/tsconfig.json": "[" * 200_000,
        "big/tsconfig.json": '{"x": "' + "a" * MAX_CONFIG_BYTES + '"}',
        "escape/tsconfig.json": '{"compilerOptions": {"paths": {"@e/*": ["../../*", "/etc/*"]}}}',
        "loop/tsconfig.json": '{"extends": "./tsconfig.json", "compilerOptions": {"paths": {"@l/*": ["*"]}}}',
        "src/a.ts": "", "linked/src/a.ts": "", "loop/a.ts": "",
    })
    # as git lists a committed link (`forgebot index` leaves a link out of the checkout out of its list)
    listed = [*list_files(root), "linked/tsconfig.json"]
    aliases = read_aliases(root, [p for p in listed if is_configuration(p)], [p for p in listed if extractor_for(p)])
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
    assert not Aliases.loads('{"scoped": [["src", {"~/a": "src/a"}]]}')  # a record of another release's form


def test_python_projects_below_the_root(tmp_path: Path) -> None:
    """A directory holding pyproject.toml, setup.py or setup.cfg is a Python project: its top-level
    packages are what its absolute imports name (`from app.core import db` in backend/)."""
    aliases = _checkout(tmp_path, {
        "backend/pyproject.toml": "[project]\nname = 'app'\n", "backend/app/__init__.py": "",
        "backend/app/core/db.py": "", "backend/tests/test_db.py": "",
        "worker/setup.py": "", "worker/src/app/__init__.py": "", "worker/tools.py": "",
        "lib/setup.cfg": "", "lib/src/util/__init__.py": "",  # `src/` is dropped from the graph's names already
        "shop/__init__.py": "",  # the checkout's own top level
    })
    assert aliases.python_module("backend/app/main.py", "app") == "backend.app"
    assert aliases.python_module("backend/tests/test_db.py", "tests") == "backend.tests"
    assert aliases.python_module("worker/tools.py", "app") == ""  # worker/src/app is `app` in the graph already
    assert aliases.python_module("worker/tools.py", "tools") == "worker.tools"
    assert aliases.python_module("scripts/deploy.py", "app") == "backend.app"  # outside: the one project having it
    assert aliases.python_module("scripts/deploy.py", "tools") == "worker.tools"
    assert aliases.python_module("backend/app/main.py", "util") == ""  # lib's names are `util` already
    assert aliases.python_module("backend/app/main.py", "shop") == ""


def test_applications_without_packaging_are_projects(tmp_path: Path) -> None:
    """An application run from its own directory often has no packaging file: a FastAPI or Flask
    `backend/` with a requirements.txt or a Pipfile, a Django site with its manage.py. Each is a
    project: its imports name its own packages."""
    aliases = _checkout(tmp_path, {
        "api/requirements.txt": "fastapi\n", "api/app/__init__.py": "", "api/app/crud.py": "",
        "site/manage.py": "", "site/polls/__init__.py": "", "site/polls/models.py": "",
        "jobs/Pipfile": "", "jobs/tasks.py": "",
        "docs/requirements.txt": "sphinx\n",  # no Python file there: nothing to map
    })
    assert aliases.python_module("api/app/main.py", "app") == "api.app"
    assert aliases.python_module("site/polls/views.py", "polls") == "site.polls"
    assert aliases.python_module("jobs/run.py", "tasks") == "jobs.tasks"
    assert aliases.python_module("site/polls/views.py", "app") == ""  # another project's: not its own


def test_the_top_level_keeps_its_own_names(tmp_path: Path) -> None:
    """Outside every project an import names the checkout's top-level package when it has one of that
    name: `import utils` in `main.py` is `utils/`, not `scripts/utils.py` of the project in `scripts/`."""
    aliases = _checkout(tmp_path, {
        "utils/__init__.py": "", "main.py": "",
        "scripts/pyproject.toml": "", "scripts/utils.py": "", "scripts/deploy.py": "",
    })
    assert aliases.python_module("main.py", "utils") == ""  # the top level's own `utils`
    assert aliases.python_module("main.py", "deploy") == "scripts.deploy"  # only the project has it
    assert aliases.python_module("scripts/deploy.py", "utils") == "scripts.utils"  # the project's own first
    assert Aliases.loads(aliases.dumps()).python_module("main.py", "utils") == ""


def test_two_python_projects_with_one_name(tmp_path: Path) -> None:
    aliases = _checkout(tmp_path, {
        "services/a/pyproject.toml": "", "services/a/app/__init__.py": "",
        "services/b/pyproject.toml": "", "services/b/app/__init__.py": "",
    })
    assert aliases.python_module("services/a/app/x.py", "app") == "services.a.app"  # each its own
    assert aliases.python_module("services/b/app/x.py", "app") == "services.b.app"
    assert aliases.python_module("tools/x.py", "app") == ""  # from outside: not knowable



def test_packages_extending_one_base_share_its_map(tmp_path: Path) -> None:
    """A monorepo whose every package extends the root's configuration (Nx, Turborepo): the mapping is
    made and recorded once; a copy per package made a 400-package checkout's record 198 MB."""
    files = {"tsconfig.base.json": '{"compilerOptions": {"baseUrl": ".", "paths": {"@org/*": ["packages/*/src"]}}}'}
    for package in range(50):
        files[f"packages/p{package}/tsconfig.json"] = '{"extends": "../../tsconfig.base.json"}'
        files[f"packages/p{package}/src/index.ts"] = ""
    aliases = _checkout(tmp_path, files)
    assert len(aliases.scoped) == 50 and len(aliases.maps) == 1
    assert aliases.resolve("packages/p3/src/index.ts", "@org/p7") == "packages/p7/src"
    assert aliases.resolve("packages/p3/src/index.ts", "packages/p9/src") == "packages/p9/src"  # `baseUrl`
