"""The code graph beyond PHP: Python, TypeScript and JavaScript in one mixed repository.

The fixture `polyglot` is a shop written three times (Python package, TypeScript modules with a TSX
view, a CommonJS helper) next to one PHP class. Each test asks what a user asks: where is it
defined, who calls it (through re-exports, subclasses, `super`, typed receivers), what does a change
impact, which exits must an override keep, what did a commit touch.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from project.index import queries
from project.index.bindings import spellings
from project.index.contract import override_contract
from project.index.db import Connection, connect
from project.index.declarations import READERS, reader_pattern
from project.index.store import build, sync_files
from tests.graph.index.conftest import _git, index_files

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "polyglot"


@pytest.fixture
def poly(tmp_path: Path) -> Iterator[tuple[Connection, Path]]:
    root = tmp_path / "polyglot"
    shutil.copytree(FIXTURES, root)
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "commit", "-qm", "fixtures")
    conn = connect(tmp_path / "index.db")
    build(conn, root, sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()))
    yield conn, root
    conn.close()


def _defs(conn: Connection, path: str) -> list[tuple[str, str, int]]:
    return [(r[0], r[1], r[2]) for r in conn.execute(
        "SELECT kind, fqn, start_line FROM symbols WHERE path = ? ORDER BY start_line, start_byte", (path,))]


def _callers(conn: Connection, root: Path, fqn: str) -> set[tuple[str, int, str]]:
    return {(s.path, s.line, s.caller) for s in queries.callers(conn, root, fqn).sites if s.certainty == "resolved"}


def test_every_language_of_a_mixed_repository_is_indexed(poly: tuple[Connection, Path]) -> None:
    conn, _ = poly
    languages = dict(conn.execute("SELECT path, language FROM files").fetchall())
    assert languages["php/Invoice.php"] == "php"
    assert languages["shop/cart.py"] == "python"
    assert languages["src/models/cart.ts"] == "typescript"
    assert languages["src/app.tsx"] == "typescript"  # TSX is TypeScript with JSX
    assert languages["legacy/util.js"] == "javascript"
    assert conn.execute("SELECT count(*) FROM files WHERE stale = 1").fetchone()[0] == 0


def test_python_definitions_follow_pythons_names(poly: tuple[Connection, Path]) -> None:
    conn, _ = poly
    assert _defs(conn, "shop/cart.py") == [
        ("module", "shop.cart", 1),
        ("class", "shop.cart.Cart", 5),
        ("method", "shop.cart.Cart::__init__", 8),
        ("method", "shop.cart.Cart::save", 12),
        ("method", "shop.cart.Cart::find", 16),
        ("method", "shop.cart.Cart::count", 20),  # the `def` line, as `ast` says; the decorator is above
        ("method", "shop.cart.Cart::total", 23),
    ]
    attributes, signature, doc = conn.execute(
        "SELECT attributes, signature, docblock FROM symbols WHERE fqn = 'shop.cart.Cart::count'").fetchone()
    assert attributes == '["property"]' and signature == "@property def count(self)"
    assert conn.execute("SELECT docblock FROM symbols WHERE fqn = 'shop.cart.Cart'").fetchone()[0] \
        == '"""A cart of prices."""'
    assert _defs(conn, "shop/__init__.py") == [("module", "shop", 1)]


def test_typescript_and_javascript_definitions(poly: tuple[Connection, Path]) -> None:
    conn, _ = poly
    assert _defs(conn, "src/models/base.ts") == [
        ("module", "src/models/base", 1),
        ("class", "src/models/base:Repository", 2),
        ("method", "src/models/base:Repository::save", 5),
        ("method", "src/models/base:Repository::find", 12),
        ("interface", "src/models/base:Priced", 15),
        ("method", "src/models/base:Priced::total", 16),
    ]
    assert _defs(conn, "src/pricing.ts")[:4] == [
        ("module", "src/pricing", 1), ("enum", "src/pricing:Currency", 1),
        ("enum_case", "src/pricing:Currency::Euro", 2), ("enum_case", "src/pricing:Currency::Dollar", 3),
    ]
    assert ("function", "src/app:checkout", 3) in _defs(conn, "src/app.tsx")  # an arrow function bound to a name
    assert ("type", "src/models/cart:Price", 4) in _defs(conn, "src/models/cart.ts")
    assert _defs(conn, "src/models/index.ts") == [("module", "src/models", 1)]  # named as `import "./models"`
    assert _defs(conn, "legacy/util.js") == [
        ("module", "legacy/util", 1), ("function", "legacy/util:legacyTotal", 3), ("function", "legacy/util:Ledger", 7),
        ("method", "legacy/util:Ledger::close", 10)]
    signature = conn.execute("SELECT signature FROM symbols WHERE fqn = 'src/models/base:Repository::find'").fetchone()
    assert signature[0] == "abstract find(key: number): T | undefined;"


def test_python_callers_through_reexports_subclasses_and_super(poly: tuple[Connection, Path]) -> None:
    conn, root = poly
    assert _callers(conn, root, "shop.base.Repository::save") == {
        ("shop/cart.py", 13, "shop.cart.Cart::save"),  # super().save(item)
        ("app.py", 7, "app.checkout"),  # `from shop import Cart`: shop/__init__.py re-exports it
        ("tests/test_cart.py", 6, "tests.test_cart.test_total"),
    }
    assert _callers(conn, root, "shop.Cart") == {  # the re-exported name: the class's instantiations
        ("app.py", 5, "app.checkout"), ("tests/test_cart.py", 5, "tests.test_cart.test_total")}
    assert _callers(conn, root, "shop.pricing.Discount") == {("shop/cart.py", 10, "shop.cart.Cart::__init__")}
    assert _callers(conn, root, "shop.pricing.Discount::apply") == {("shop/cart.py", 25, "shop.cart.Cart::total")}
    assert _callers(conn, root, "shop.cart.Cart.total") == {  # dotted, as a Python programmer writes it
        ("shop/cart.py", 14, "shop.cart.Cart::save"), ("app.py", 8, "app.checkout"),
        ("tests/test_cart.py", 7, "tests.test_cart.test_total")}


def test_script_callers_through_barrels_namespaces_and_require(poly: tuple[Connection, Path]) -> None:
    conn, root = poly
    assert _callers(conn, root, "src/models/base:Repository::save") == {
        ("src/models/cart.ts", 10, "src/models/cart:Cart::save"),  # super.save(item)
        ("src/app.tsx", 5, "src/app:checkout"),  # `import { Cart } from "./models"`, an index re-export
    }
    assert _callers(conn, root, "src/pricing:sumPrices") == {
        ("src/models/cart.ts", 19, "src/models/cart:Cart::total"),  # `import * as pricing`
        ("legacy/util.js", 4, "legacy/util:legacyTotal"),  # `const { sumPrices } = require(...)`
        ("legacy/util.js", 11, "legacy/util:Ledger::close"),  # `Ledger.prototype.close = function…`
        ("src/components/Total.vue", 8, "src/components/Total.vue"),  # a Vue component's `<script setup>`
        ("src/components/Total.vue", 2, "src/components/Total.vue"),  # and its template
        ("packages/checkout/src/order.ts", 4, "packages/checkout/src/order:orderTotal"),  # "@shop/pricing"
    }
    assert _callers(conn, root, "src/pricing:Discount") == {("src/models/cart.ts", 7, "src/models/cart:Cart")}
    assert _callers(conn, root, "src/pricing:Discount::apply") == {
        ("src/models/cart.ts", 20, "src/models/cart:Cart::total")}  # a field typed by `new` in its initializer


def test_impact_and_overrides(poly: tuple[Connection, Path]) -> None:
    conn, root = poly
    # a module's impact is who imports it or a name of it (`from shop.cart import Cart`, `from .cart import`,
    # `from shop import Cart` through the package's re-export)
    assert {(n.path, n.fqn) for n in queries.impact(conn, root, "shop.cart", depth=1).nodes
            if n.relation == "imports"} == {
        ("tests/test_cart.py", "tests.test_cart"), ("shop/__init__.py", "shop"), ("app.py", "app")}
    found = {(n.fqn, n.relation) for n in queries.impact(conn, root, "shop.base.Repository::find").nodes}
    assert found == {("shop.cart.Cart::find", "overrides")}
    found = {(n.fqn, n.relation) for n in queries.impact(conn, root, "src/models/base:Repository", depth=1).nodes}
    assert ("src/models/cart:Cart", "extends") in found
    found = {(n.fqn, n.relation) for n in queries.impact(conn, root, "src/models/base:Priced", depth=1).nodes}
    assert found == {("src/models/cart:Cart", "implements")}


def test_override_contracts_read_each_grammar(poly: tuple[Connection, Path]) -> None:
    conn, root = poly
    python = override_contract(conn, root, "shop.cart.Cart::save")
    assert python.ancestor is not None and python.ancestor.fqn == "shop.base.Repository::save"
    assert [(e.kind, e.line) for e in python.exits] == [("throw", 9), ("implicit_return", 10)]
    script = override_contract(conn, root, "src/models/cart:Cart::save")
    assert [(e.kind, e.line) for e in script.exits] == [("throw", 7), ("implicit_return", 10)]
    abstract = override_contract(conn, root, "src/models/cart:Cart::find")
    assert abstract.ancestor is None and [h.fqn for h in abstract.declared_by] == ["src/models/base:Repository::find"]
    # asked as Python spells it (`Class.method`, as callers and impact take it), for a method written
    # already or one an override is about to add: read as the member (it was refused: "not a method")
    for dotted, member in (("shop.cart.Cart.save", "shop.cart.Cart::save"),
                           ("shop.cart.Cart.delete", "shop.cart.Cart::delete")):
        asked = override_contract(conn, root, dotted)
        assert asked.method == member
    assert override_contract(conn, root, "shop.Cart.save").ancestor.fqn == "shop.base.Repository::save"  # re-exported
    assert queries.canonical(conn, "shop.Cart.save") == "shop.cart.Cart::save"  # callers and impact read it so too
    with pytest.raises(ValueError, match="is not a method"):
        override_contract(conn, root, "shop.cart.helper_nowhere")


def test_symbols_commands_work_unchanged(poly: tuple[Connection, Path]) -> None:
    conn, root = poly
    assert [h.fqn for h in queries.definition(conn, root, "Cart::save").symbols] == [
        "shop.cart.Cart::save", "src/models/cart:Cart::save"]
    assert [h.fqn for h in queries.definition(conn, root, "src/models:Cart").symbols] == ["src/models/cart:Cart"]
    outline = queries.outline(conn, root, "shop/pricing.py")
    assert [h.fqn for h in outline.symbols] == [
        "shop.pricing", "shop.pricing.sum_prices", "shop.pricing.Discount", "shop.pricing.Discount::__init__",
        "shop.pricing.Discount::apply"]


def test_a_python_name_differing_only_in_case_is_another_name(poly: tuple[Connection, Path]) -> None:
    conn, root = poly
    assert [h.fqn for h in queries.definition(conn, root, "shop.Cart").symbols] == ["shop.cart.Cart"]  # no module
    assert [h.fqn for h in queries.definition(conn, root, "shop\\invoice").symbols] == ["Shop\\Invoice"]  # caseless


def test_a_broken_edit_keeps_the_last_good_rows(poly: tuple[Connection, Path]) -> None:
    conn, root = poly
    (root / "shop" / "pricing.py").write_text("def sum_prices(prices:\n")
    report = sync_files(conn, root, ["shop/pricing.py"])
    assert report.stale == ["shop/pricing.py"]
    assert ("function", "shop.pricing.sum_prices", 1) in _defs(conn, "shop/pricing.py")
    assert queries.definition(conn, root, "shop.pricing.sum_prices").status.state == "stale"


def test_history_reads_python_and_typescript_blobs_with_the_graphs_names() -> None:
    old = (b"class Cart:\n    def save(self):\n        return 1\n\n"
           b"    @property\n    def total(self):\n        return 2\n")
    new = old.replace(b"return 2", b"return 3").replace(b"@property", b"@cached")
    pattern = reader_pattern("shop/cart.py")
    assert pattern is not None
    reader = READERS[pattern]()
    before = reader.parse(old, path="shop/cart.py")
    after = reader.parse(new, before, [(5, 1, 5, 1), (7, 1, 7, 1)], path="shop/cart.py")
    touched = reader.enclosing(after, [5, 7])
    assert [(d.kind, d.fqn, d.start_line, lines) for d, lines in touched.items()] == [
        ("method", "shop.cart.Cart::total", 5, [5, 7])]  # the decorator line belongs to the method
    assert reader.declares(after, [("method", "shop.cart.Cart::save"), ("class", "shop.cart.Gone")]) == {
        "shop.cart.Cart::save"}
    script = READERS[reader_pattern("src/a.ts") or ""]()
    version = script.parse(b"/** Doc. */\nexport function f() {\n  return 1;\n}\n", path="src/a.ts")
    assert [(d.fqn, d.start_line, d.end_line) for d in script.enclosing(version, [1, 3])] == [("src/a:f", 1, 4)]
    assert [d.fqn for d in script.types(script.parse(b"class A {}\ninterface B {}\n", path="src/a.ts"))] == [
        "src/a:A", "src/a:B"]


def test_script_callers_through_aliases_workspace_packages_and_star_barrels(poly: tuple[Connection, Path]) -> None:
    """What a monorepo's imports name: tsconfig `paths` (`@shop/*` is `src/*`), a workspace package by
    its package.json name (`@shop/checkout`, whose `src/index.ts` is `export * from "./order"`)."""
    conn, root = poly
    assert _callers(conn, root, "packages/checkout/src/order:orderTotal") == {
        ("src/receipt.ts", 4, "src/receipt:receipt")}
    assert queries.canonical(conn, "packages/checkout/src:orderTotal") == "packages/checkout/src/order:orderTotal"
    assert queries.canonical(conn, "src/models:Repository") == "src/models/base:Repository"  # `export *`
    # asked by a re-exported name, callees answers for the definition (it read the name as given, found none)
    assert {s.target_name for s in queries.callees(conn, root, "src/models:Cart::total").sites} >= {"sumPrices"}
    # a one-file sync reads the aliases the build recorded
    (root / "src" / "receipt.ts").write_text('import { sumPrices } from "@shop/pricing";\n\n'
                                             "export const receipt = (p: number[]) => sumPrices(p);\n")
    sync_files(conn, root, ["src/receipt.ts"])
    assert ("src/receipt.ts", 3, "src/receipt:receipt") in _callers(conn, root, "src/pricing:sumPrices")
    assert _callers(conn, root, "packages/checkout/src/order:orderTotal") == set()


def test_a_changed_alias_reads_every_file_again(poly: tuple[Connection, Path]) -> None:
    """The rows of unchanged files depend on the aliases: a build under other ones reads them again."""
    conn, root = poly
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and ".git" not in p.parts)
    assert build(conn, root, files).parsed == []
    receipt = root / "src" / "receipt.ts"
    receipt.write_text(receipt.read_text() + "\n")
    assert sync_files(conn, root, ["src/receipt.ts"]).parsed == ["src/receipt.ts"]  # reads today's aliases
    (root / "tsconfig.json").write_text('{"compilerOptions": {"paths": {"@shop/*": ["legacy/*"]}}}')
    report = build(conn, root, files)
    assert "packages/checkout/src/order.ts" in report.parsed and "shop/cart.py" in report.parsed
    assert ("packages/checkout/src/order.ts", 4, "packages/checkout/src/order:orderTotal") not in _callers(
        conn, root, "src/pricing:sumPrices")  # `@shop/pricing` names no module of legacy/ now
    # an edit's re-sync reads the aliases of the build now, not those an earlier sync of this process read
    order = root / "packages" / "checkout" / "src" / "order.ts"
    order.write_text(order.read_text().replace("@shop/pricing", "@shop/util"))
    sync_files(conn, root, ["packages/checkout/src/order.ts"])
    assert ("packages/checkout/src/order.ts", 4, "packages/checkout/src/order:orderTotal") in _callers(
        conn, root, "legacy/util:sumPrices")


def test_python_callers_through_a_star_import(tmp_path: Path) -> None:
    """`from .core import *` in a package's `__init__.py` publishes every name of `core` under the package."""
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("from .core import *\n")
    (root / "pkg" / "core.py").write_text("def helper():\n    return 1\n")
    (root / "app.py").write_text("import pkg\nfrom pkg import helper\n\n\ndef run():\n    helper()\n"
                                 "    return pkg.helper()\n")
    (root / "every.py").write_text("from pkg import *\n")
    conn = connect(tmp_path / "index.db")
    build(conn, root, ["pkg/__init__.py", "pkg/core.py", "app.py", "every.py"])
    assert _callers(conn, root, "pkg.core.helper") == {("app.py", 6, "app.run"), ("app.py", 7, "app.run")}
    assert queries.canonical(conn, "pkg.helper") == "pkg.core.helper"
    assert queries.canonical(conn, "every.helper") == "pkg.core.helper"
    # a star covers the names of one module: `every` does not hold `every.core.helper` (a star over a
    # package spelling every name of its subpackages crowded the real names out of a callers query)
    assert sorted(spellings(conn, "pkg.core.helper")) == ["app.helper", "every.helper", "pkg.core.helper", "pkg.helper"]


def test_an_answer_about_a_name_no_definition_carries_says_so(poly: tuple[Connection, Path]) -> None:
    """"No callers" for a misspelled name, a name in another form or another language would read as a
    fact about the code: the answer says no definition carries the name, and which ones have it."""
    conn, root = poly
    answer = queries.callers(conn, root, "src/pricing.sumPrices")  # the dotted form of a script name
    assert answer.sites == [] and answer.status.state == "ok"
    assert answer.status.note.startswith("no definition is named 'src/pricing.sumPrices' (definitions with "
                                         "that name: src/pricing:sumPrices)")
    assert "no definition is named 'main.Settle' (none has that name either)" in queries.impact(
        conn, root, "main.Settle").status.note  # a Go function: the graph holds none
    assert "no definition is named" in queries.callees(conn, root, "shop.nowhere.run").status.note
    for known in ("src/pricing:sumPrices", "shop.Cart", "src/models/cart:Cart::anything"):  # a member may be inherited
        assert "no definition is named" not in queries.callers(conn, root, known).status.note
    # an override contract asked of a class no definition carries: not "no ancestor implementation" alone
    assert "no definition is named 'src/models/carts:Cart::save'" in override_contract(
        conn, root, "src/models/carts:Cart::save").status.note


def test_a_function_bound_through_a_cast_is_a_function(tmp_path: Path) -> None:
    """`export const createApp = ((...args) => {…}) as CreateAppFunction` (vuejs/core binds its entry
    points so): the function is defined at its name, and its callers are found."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "app.ts").write_text(
        "type Make = (n: number) => number;\n"
        "export const make = ((n: number) => n + 1) as Make;\n"
        "export const check = (() => true) satisfies () => boolean;\n"
        "export class Shop {\n  handle = ((e: number) => e)!;\n}\n")
    (root / "use.ts").write_text('import { make, check } from "./app";\n\nexport function run() {\n'
                                 "  return make(check() ? 1 : 2);\n}\n")
    conn = connect(tmp_path / "index.db")
    build(conn, root, ["app.ts", "use.ts"])
    assert ("function", "app:make", 2) in _defs(conn, "app.ts")
    assert ("function", "app:check", 3) in _defs(conn, "app.ts")
    assert ("method", "app:Shop::handle", 5) in _defs(conn, "app.ts")
    assert _callers(conn, root, "app:make") == {("use.ts", 4, "use:run")}



def test_a_django_site_named_as_its_directory(tmp_path: Path) -> None:
    """`django-admin startproject mysite` makes `mysite/manage.py` and the package `mysite/mysite/`: the
    site imports `mysite.views`, the graph names it `mysite.mysite.views`. Asked by the site's name, a
    query maps it once (mapping `mysite` again and again overflowed the stack: a RecursionError for any
    name under `mysite.` that no definition carries, seen on netbox)."""
    root = tmp_path / "repo"
    (root / "mysite" / "mysite").mkdir(parents=True)
    (root / "mysite" / "manage.py").write_text("import mysite.views\n")
    (root / "mysite" / "mysite" / "__init__.py").write_text("")
    (root / "mysite" / "mysite" / "views.py").write_text("def index(request):\n    return 1\n")
    (root / "mysite" / "mysite" / "urls.py").write_text(
        "from mysite.views import index\n\n\ndef route(request):\n    return index(request)\n")
    conn = connect(tmp_path / "index.db")
    build(conn, root, ["mysite/manage.py", "mysite/mysite/__init__.py", "mysite/mysite/views.py",
                       "mysite/mysite/urls.py"])
    assert _callers(conn, root, "mysite.mysite.views.index") == {
        ("mysite/mysite/urls.py", 5, "mysite.mysite.urls.route")}
    assert queries.canonical(conn, "mysite.views.index") == "mysite.mysite.views.index"  # as the site names it
    assert queries.canonical(conn, "mysite.nowhere") == "mysite.nowhere"  # no such definition: said as asked
    assert "no definition is named 'mysite.nowhere'" in queries.callers(conn, root, "mysite.nowhere").status.note


def test_definitions_alone_are_the_graphs_definitions(poly: tuple[Connection, Path]) -> None:
    """History reads every version of a file for its definitions alone (`relations=False`: no call is
    captured or resolved, 40% of the extraction on sympy): the same rows the graph stores."""
    from project.index.extractors import Parsers, extractor_for

    _, root = poly
    parsers = Parsers()
    read = 0
    for path in sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()):
        extractor = extractor_for(path)
        if extractor is None or extractor.language == "php":  # PHP's history has a reader of its own
            continue
        source = (root / path).read_bytes()
        tree = parsers.get(extractor).parse(source)
        whole, alone = extractor.read(path, source, tree, "-"), extractor.read(path, source, tree, "-", relations=False)
        assert alone.symbols == whole.symbols and whole.symbols, path
        assert not [r for r in alone.relations if r[1] == "calls"], path
        read += any(r[1] == "calls" for r in whole.relations)
    assert read >= 6  # files whose calls the whole read has and the definitions alone do not


def test_a_short_name_is_read_as_the_one_definition_it_can_mean(tmp_path: Path) -> None:
    """`Ledger.close`, `Ledger::close`, `close`: answered for the one definition so named, with a note saying
    how the name was read; two definitions of the name, or a qualifier naming what the graph does not
    hold (`billing.refundz.Ledger.close`), are not guessed at: the note lists the candidates."""
    root = tmp_path / "repo"
    (root / "billing").mkdir(parents=True)
    (root / "billing" / "refunds.py").write_text(
        "class Ledger:\n    def close(self):\n        return 1\n\n    def open(self):\n        return 1\n\n\n"
        "def settle(ledger: Ledger):\n    ledger.close()\n    ledger.open()\n")
    (root / "billing" / "files.py").write_text("class Drawer:\n    def open(self):\n        return 1\n" + "".join(
        f"\n\nclass Box{n}:\n    def close(self):\n        return {n}\n" for n in range(40)))  # `close` of many
    conn = connect(tmp_path / "index.db")
    build(conn, root, ["billing/files.py", "billing/refunds.py"])
    assert queries.only_definition(conn, "close") == ""  # 41 definitions carry it
    assert queries.only_definition(conn, "Box39.close") == "billing.files.Box39::close"
    for asked in ("Ledger.close", "Ledger::close"):
        answer = queries.callers(conn, root, asked)
        assert {(s.path, s.line) for s in answer.sites if s.certainty == "resolved"} == {("billing/refunds.py", 10)}
        assert answer.status.note == f"{asked!r} read as billing.refunds.Ledger::close, the one definition of that name"
    assert queries.callers(conn, root, "billing.refunds.Ledger.close").status.note == ""  # the full name
    ambiguous = queries.callers(conn, root, "open")
    assert ambiguous.sites == []  # not guessed: the one call is resolved to Ledger::open, not named "open"
    assert "definitions with that name: billing.files.Drawer::open, billing.refunds.Ledger::open" in \
        ambiguous.status.note
    assert queries.callers(conn, root, "Ledger.open").status.note.startswith("'Ledger.open' read as")
    assert queries.callers(conn, root, "billing.refundz.Ledger.close").status.note.startswith("no definition")
    assert queries.only_definition(conn, "Ledgr.close") == queries.only_definition(conn, "App\\Ledger::close") == ""


def test_javascript_functions_assigned_to_members_are_definitions(tmp_path: Path) -> None:
    """Express, Node's libraries and JavaScript older than ES classes define their API by assignment
    (`View.prototype.render = function…`, `res.send = function…`, `exports.f = …`): each is a definition,
    as the TypeScript compiler binds them in a JavaScript file, and `this` in its body is its object."""
    root = tmp_path / "repo"
    (root / "lib").mkdir(parents=True)
    (root / "lib" / "view.js").write_text(
        "function View(name) {\n  this.name = name;\n}\n\n"
        "View.prototype.lookup = function lookup(name) {\n  return name;\n};\n\n"
        "View.prototype.render = function (options) {\n  return this.lookup(options.name);\n};\n"
        "module.exports = View;\n")
    (root / "lib" / "response.js").write_text(
        "var res = Object.create(null);\nmodule.exports = res;\n\n"
        "res.send = function send(body) {\n  return body;\n};\n\n"
        "res.json = function json(obj) {\n  function encode() {\n    return JSON.stringify(obj);\n  }\n"
        "  return this.send(encode());\n};\n\n"
        "res.later = () => this.send(1);\n\n"
        "exports.helper = function helper() {\n  return 1;\n};\n\n"
        "function setup(app) {\n  app.get = function get() {};\n}\n"
        "$.fn.tip = function () {};\nwindow[name] = function () {};\n"
        "if (res) {\n  res.patch = function () {};\n}\nmodule.exports = function () {};\n"
        "exports.helper.only = function () {};\n")
    (root / "use.js").write_text('const { helper } = require("./lib/response");\n\n'
                                 "function run() {\n  return helper();\n}\n")
    (root / "typed.ts").write_text("function Old() {}\nOld.prototype.m = function () {};\n")
    conn = connect(tmp_path / "index.db")
    build(conn, root, ["lib/view.js", "lib/response.js", "use.js", "typed.ts"])
    assert _defs(conn, "lib/view.js") == [
        ("module", "lib/view", 1), ("function", "lib/view:View", 1),
        ("method", "lib/view:View::lookup", 5), ("method", "lib/view:View::render", 9)]
    assert _defs(conn, "lib/response.js") == [
        ("module", "lib/response", 1), ("method", "lib/response:res::send", 4),
        ("method", "lib/response:res::json", 8), ("function", "lib/response:res.json.encode", 9),
        ("method", "lib/response:res::later", 15), ("function", "lib/response:helper", 17),
        ("function", "lib/response:setup", 21),  # `app.get` inside a function is a patch, not a definition
        ("method", "lib/response:$.fn::tip", 24), ("function", "lib/response:helper.only", 30)]
    assert _defs(conn, "typed.ts") == [("module", "typed", 1), ("function", "typed:Old", 1)]  # as TypeScript binds
    assert _callers(conn, root, "lib/view:View::lookup") == {("lib/view.js", 10, "lib/view:View::render")}
    # `this` in an arrow function is not `res`
    assert _callers(conn, root, "lib/response:res::send") == {("lib/response.js", 12, "lib/response:res::json")}
    assert _callers(conn, root, "lib/response:helper") == {("use.js", 4, "use:run")}


def test_a_commonjs_modules_value_is_what_calling_its_require_calls(tmp_path: Path) -> None:
    """Express: `exports = module.exports = createApplication` (declared below), the package's root
    `index.js` passes it on (`module.exports = require("./lib/express")`), and its examples call
    `express()` after `require("../..")`: each call is a call of createApplication."""
    root = tmp_path / "repo"
    (root / "lib").mkdir(parents=True)
    (root / "examples" / "hello").mkdir(parents=True)
    (root / "index.js").write_text('module.exports = require("./lib/express");\n')
    (root / "lib" / "express.js").write_text(
        "exports = module.exports = createApplication;\n\nfunction createApplication() {\n  return {};\n}\n\n"
        "function later() {\n  module.exports = other;\n}\n\nfunction other() {}\n")
    (root / "examples" / "hello" / "index.js").write_text(
        'var express = require("../..");\nvar direct = require("../../lib/express");\n\n'
        "function main() {\n  express();\n  return direct();\n}\n")
    conn = connect(tmp_path / "index.db")
    build(conn, root, ["index.js", "lib/express.js", "examples/hello/index.js"])
    assert _callers(conn, root, "lib/express:createApplication") == {
        ("examples/hello/index.js", 5, "examples/hello:main"), ("examples/hello/index.js", 6, "examples/hello:main")}
    assert _callers(conn, root, "lib/express:other") == set()  # set inside a function: not the module's value


def test_a_rendered_component_is_called_where_its_element_is_written(tmp_path: Path) -> None:
    """`<Button …/>` renders Button: its callers are where the element is written (a React code base asked
    "who renders Button" had no answer), `<UI.Button/>` through a namespace import too, never `<div>`; and a
    component wrapped in `forwardRef` or `memo` is defined at its name, as an arrow function bound to it is."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "Button.tsx").write_text(
        'import React, { forwardRef, memo } from "react";\n\n'
        "export const Button = ({ label }: { label: string }) => <button>{label}</button>;\n\n"
        "export const Island = React.forwardRef<HTMLDivElement, { a?: number }>((props, ref) => (\n"
        "  <div ref={ref} />\n));\n\n"
        "export const Framed = memo(forwardRef(function Inner(props: object, ref) {\n"
        "  return <Island />;\n}));\n")
    (root / "App.tsx").write_text(
        'import { Button, Island } from "./Button";\nimport * as UI from "./Button";\n\n'
        "export function App() {\n  return (\n    <Island>\n      <Button label=\"x\" />\n"
        "      <UI.Button label=\"y\" />\n      <div />\n    </Island>\n  );\n}\n")
    conn = connect(tmp_path / "index.db")
    build(conn, root, ["Button.tsx", "App.tsx"])
    assert _defs(conn, "Button.tsx") == [
        ("module", "Button", 1), ("function", "Button:Button", 3), ("function", "Button:Island", 5),
        ("function", "Button:Framed", 9)]
    assert _callers(conn, root, "Button:Button") == {("App.tsx", 7, "App:App"), ("App.tsx", 8, "App:App")}
    assert _callers(conn, root, "Button:Island") == {("App.tsx", 6, "App:App"), ("Button.tsx", 10, "Button:Framed")}
    called = {row[0] for row in conn.execute("SELECT target_name FROM relations WHERE kind = 'calls'")}
    assert not called & {"div", "button"}, called


def test_a_vue_components_script_calls_are_callers(tmp_path: Path) -> None:
    """A composable called from thirty components had no callers: a `.vue` file was not read. Its script
    blocks are read in place as TypeScript (definitions at the component's own lines), its calls are
    callers, and a composable passed on under another name (`export const useData = useData$`) is
    followed to the function."""
    root = tmp_path / "repo"
    (root / "src" / "components").mkdir(parents=True)
    (root / "src" / "cart.ts").write_text("export function useCart() {\n  return 1;\n}\n")
    (root / "src" / "data.ts").write_text('import { useCart as useCart$ } from "./cart";\n\n'
                                         "export const useData: typeof useCart$ = useCart$;\n")
    (root / "src" / "components" / "Cart.vue").write_text(
        "<template>\n  <p>{{ total() }}</p>\n</template>\n\n"
        '<script setup lang="ts">\nimport { useCart } from "../cart";\nimport { useData } from "../data";\n\n'
        "function total() {\n  return useCart() + useData();\n}\n</script>\n\n"
        "<style scoped>\np { color: red; }\n</style>\n")
    (root / "src" / "cart.service.ts").write_text("export function save() {}\n")
    (root / "src" / "use.ts").write_text('import { save } from "./cart.service";\n')
    (root / "src" / "components" / "Page.vue").write_text(
        '<script setup>\nimport Cart from "./Cart.vue";\n</script>\n\n<template>\n  <Cart />\n</template>\n')
    conn = connect(tmp_path / "index.db")
    build(conn, root, ["src/cart.ts", "src/data.ts", "src/components/Cart.vue", "src/components/Page.vue",
                       "src/cart.service.ts", "src/use.ts"])
    # a component is its module: `impact` of it is the files importing it, then theirs
    assert [(n.fqn, n.relation, n.line) for n in queries.impact(conn, root, "src/components/Cart.vue").nodes] == [
        ("src/components/Page.vue", "imports", 2)]
    # `src/cart.service` is another module, not a name of `src/cart`
    assert {(n.path, n.line) for n in queries.impact(conn, root, "src/cart", depth=1).nodes} == {
        ("src/components/Cart.vue", 6), ("src/data.ts", 1)}
    assert _defs(conn, "src/components/Cart.vue") == [
        ("module", "src/components/Cart.vue", 1), ("function", "src/components/Cart.vue:total", 9)]
    # `{{ total() }}` in the template, above the script that declares it
    assert _callers(conn, root, "src/components/Cart.vue:total") == {
        ("src/components/Cart.vue", 2, "src/components/Cart.vue")}
    sites = [(s.path, s.line, s.caller, s.certainty) for s in queries.callers(conn, root, "src/cart:useCart").sites]
    # `useCart()` and `useData()`, the same function by its two names
    assert sites == [("src/components/Cart.vue", 10, "src/components/Cart.vue:total", "resolved")] * 2
    assert conn.execute("SELECT stale FROM files WHERE path = 'src/components/Cart.vue'").fetchone()[0] == 0


def test_a_svelte_components_script_calls_through_sveltekits_lib(tmp_path: Path) -> None:
    """A SvelteKit project imports its own code as `$lib/…`, mapped by a tsconfig SvelteKit generates and
    nobody commits: a project's `svelte.config.js` gives it `$lib` = its `src/lib` (a `paths` of its own
    tsconfig.json still applies), and its components' `<script>` blocks and markup expressions are read."""
    root = tmp_path / "repo"
    (root / "web" / "src" / "lib").mkdir(parents=True)
    (root / "web" / "src" / "routes").mkdir(parents=True)
    (root / "web" / "svelte.config.js").write_text("export default { kit: {} };\n")
    (root / "web" / "tsconfig.json").write_text(
        '{"extends": "./.svelte-kit/tsconfig.json", "compilerOptions": {"paths": {"@ui/*": ["src/lib/*"]}}}')
    (root / "web" / "src" / "lib" / "utils.ts").write_text("export function cn(...names: string[]) {\n"
                                                          '  return names.join(" ");\n}\n')
    (root / "web" / "src" / "routes" / "+page.svelte").write_text(
        '<script lang="ts">\n  import { cn } from "$lib/utils.js";\n  import { cn as join } from "@ui/utils";\n\n'
        '  const classes = cn("a", "b");\n  const other = join("c");\n</script>\n\n'
        '{#if other}\n  <p class={cn(classes, "x")} style="a: {b}">{other}</p>\n{/if}\n')
    conn = connect(tmp_path / "index.db")
    build(conn, root, ["web/svelte.config.js", "web/tsconfig.json", "web/src/lib/utils.ts",
                       "web/src/routes/+page.svelte"])
    assert _callers(conn, root, "web/src/lib/utils:cn") == {
        ("web/src/routes/+page.svelte", 5, "web/src/routes/+page.svelte"),
        ("web/src/routes/+page.svelte", 6, "web/src/routes/+page.svelte"),
        ("web/src/routes/+page.svelte", 10, "web/src/routes/+page.svelte")}  # `class={cn(…)}` in the markup
    assert conn.execute("SELECT stale FROM files WHERE path = 'web/src/routes/+page.svelte'").fetchone()[0] == 0


def test_javascript_methods_of_an_object_assigned_to_a_prototype(tmp_path: Path) -> None:
    """jQuery writes classes as `Data.prototype = { cache: function…, get(owner) {…} }`, also in a chain
    (`jQuery.fn = jQuery.prototype = {…}`): each function of the object is a method of the class, as the
    TypeScript compiler binds it, and `this.get()` in one finds the other; an object nested in it, or one
    in a class field, defines nothing."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "data.js").write_text(
        "function Data() {}\n\nData.prototype = {\n  cache: function (owner) {\n    return this.get(owner);\n  },\n"
        "  get(owner) {\n    return owner;\n  },\n  size: 0,\n  options: { inner: function () {} },\n};\n\n"
        "var jQuery = function () {};\njQuery.fn = jQuery.prototype = {\n  toArray: function () {},\n};\n"
        "res.type = res.contentType = function (type) {};\n"
        "class Box {\n  handlers = { open: function () {} };\n}\n")
    conn = connect(tmp_path / "index.db")
    build(conn, root, ["data.js"])
    assert _defs(conn, "data.js") == [
        ("module", "data", 1), ("function", "data:Data", 1), ("method", "data:Data::cache", 4),
        ("method", "data:Data::get", 7), ("function", "data:jQuery", 14), ("method", "data:jQuery::toArray", 16),
        ("method", "data:res::contentType", 18), ("class", "data:Box", 19)]
    assert _callers(conn, root, "data:Data::get") == {("data.js", 5, "data:Data::cache")}


def test_a_field_angular_injects_holds_an_instance_of_its_class(tmp_path: Path) -> None:
    """`private readonly dataService = inject(DataService)`, Angular's way since version 14 (ghostfolio's
    components hold every service so): its calls are the service's methods'. Only Angular's `inject`
    says so; a function of the same name from elsewhere does not (Vue's returns what a key provides)."""
    conn, root = index_files(tmp_path, {
        "data.service.ts": "export class DataService {\n  fetchAccesses() { return []; }\n}\n",
        "access.component.ts": 'import { Component, inject } from "@angular/core";\n'
                               'import { DataService } from "./data.service";\n\n'
                               "export class AccessComponent {\n"
                               "  private readonly dataService = inject(DataService);\n\n"
                               "  ngOnInit() {\n    this.dataService\n      .fetchAccesses();\n  }\n}\n",
        "store.ts": 'import { inject } from "vue";\nimport { DataService } from "./data.service";\n\n'
                    "export class Store {\n  data = inject(DataService);\n\n"
                    "  load() {\n    return this.data.fetchAccesses();\n  }\n}\n"})
    assert _callers(conn, root, "data.service:DataService::fetchAccesses") == {
        ("access.component.ts", 9, "access.component:AccessComponent::ngOnInit")}


def test_a_task_queued_through_celery_or_dramatiq_is_called_there(tmp_path: Path) -> None:
    """`send_email.delay(to)` runs the task function in a worker: a call of it (saleor: 0 -> 118 of its
    141 calls by those names lead to the task). A member of that name of anything but a function is not."""
    conn, root = index_files(tmp_path, {
        "tasks.py": "def send_email(to):\n    return to\n\n\ndef later(to):\n"
                    "    send_email.apply_async((to,), countdown=5)\n",
        "views.py": "from tasks import send_email\n\n\nclass Mailer:\n    pass\n\n\n"
                    "def signup(to, sock):\n    send_email.delay(to)\n    send_email.send(to)\n    sock.send(to)\n"
                    "    Mailer.delay(to)\n"})
    assert _callers(conn, root, "tasks.send_email") == {
        ("tasks.py", 6, "tasks.later"), ("views.py", 9, "views.signup"), ("views.py", 10, "views.signup")}


def test_a_call_by_name_counts_only_in_the_definitions_language(tmp_path: Path) -> None:
    """A PHP application with a JavaScript front end: `tracker.run()` in a script is no call of the PHP
    seeder's `run`, nor `$process->run()` of the script's. Before, a third of BookStack's by-name sites
    of a sampled PHP method were JavaScript's (2,279 of 6,662), and as many the other way."""
    conn, root = index_files(tmp_path, {
        "app/Seeder.php": "<?php\nnamespace App;\n\nclass Seeder\n{\n    public function run() {}\n}\n",
        "app/Job.php": "<?php\nnamespace App;\n\nfunction go($process)\n{\n    $process->run();\n}\n",
        "resources/drag.js": "export class Drag {\n  run() {}\n}\n\nexport function go(tracker) {\n"
                             "  tracker.run();\n}\n"})
    assert {(s.path, s.certainty) for s in queries.callers(conn, root, "App\\Seeder::run").sites} == {
        ("app/Job.php", "by_name")}
    assert {(s.path, s.certainty) for s in queries.callers(conn, root, "resources/drag:Drag::run").sites} == {
        ("resources/drag.js", "by_name")}


def test_a_call_through_an_imported_module_instance_is_a_call_of_its_class(tmp_path: Path) -> None:
    """`export const api = new ApiClient()` and `db = Database()`, imported elsewhere (through a barrel
    too): `api.get()` calls `ApiClient::get`. Before, such a call named `client:api.get`, which no
    definition carries (dub: its .ts definitions with a caller 351 -> 364 of 400)."""
    conn, root = index_files(tmp_path, {
        "web/client.ts": "export class ApiClient {\n  get() {}\n}\n\nexport const api = new ApiClient();\n",
        "web/index.ts": 'export { api } from "./client";\n',
        "web/page.ts": 'import { api } from "./index";\n\nexport function load() {\n  api.get();\n}\n',
        "app/db.py": "class Database:\n    def query(self):\n        pass\n\n\ndb = Database()\n",
        "app/views.py": "from app.db import db\n\n\ndef show():\n    db.query()\n"})
    assert _callers(conn, root, "web/client:ApiClient::get") == {("web/page.ts", 4, "web/page:load")}
    assert _callers(conn, root, "app.db.Database::query") == {("app/views.py", 5, "app.views.show")}
