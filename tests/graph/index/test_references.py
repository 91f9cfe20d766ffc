"""A function handed over as a value is a use of it: `map(fmt, xs)`, `Depends(get_db)`,
`app.get("/", handler)`, `el.addEventListener("click", this.onClick)`, `onClick={save}`.

None of these is a call expression, so before they were no rows at all: the callers of a route handler,
a FastAPI dependency or a React event handler were empty. They are `references` rows, which `callers`
lists beside calls, matched by their exact target only (an argument that is data, `init(settings)`
with an imported `settings`, names no function and so is no one's caller).
"""

from __future__ import annotations

from pathlib import Path

from project.index import queries
from project.index.db import Connection
from tests.graph.index.conftest import index_files

PYTHON = {
    "shop/hooks.py": "def on_saved(cart):\n    return cart\n\n\nTIMEOUT = 3\n",
    "shop/cart.py": (
        "import threading\n"
        "from shop.hooks import TIMEOUT, on_saved\n\n\n"
        "def fmt(x):\n    return str(x)\n\n\n"
        "class Cart:\n"
        "    def __init__(self):\n        self.timeout = TIMEOUT\n\n"
        "    def notify(self, item):\n        return item\n\n"
        "    def wire(self, bus, xs):\n"
        "        bus.subscribe('saved', on_saved)\n"  # 17: an imported function
        "        bus.subscribe('item', self.notify)\n"  # 18: a method of this class
        "        bus.wait(self.timeout, TIMEOUT)\n"  # 19: an attribute, not a method; an imported value
        "        fmt = len\n"  # 20: a local named like the module's function
        "        return list(map(fmt, xs)), isinstance(bus, Cart), sorted(xs, key=str)\n"  # 21
        "\n\n"
        "def main(xs):\n"
        "    threading.Thread(target=fmt).start()\n"  # 25: a keyword argument
        "    return list(map(fmt, xs))\n"  # 26
    ),
}
SCRIPT = {
    "app.ts": (
        "export function fmt(x: number): string { return String(x); }\n"
        "function handler(req: unknown): void {}\n"
        "export class View {\n"
        "  state = 1;\n"
        "  onClick(e: unknown): void {}\n"
        "  wire(el: { addEventListener(n: string, f: unknown): void }): void {\n"
        '    el.addEventListener("click", this.onClick);\n'  # 7
        '    el.addEventListener("state", this.state);\n'  # 8: a field
        "  }\n"
        "}\n"
        "export function main(xs: number[], app: { get(p: string, h: unknown): void }) {\n"
        '  app.get("/", handler);\n'  # 12
        "  const local = fmt;\n"
        "  return xs.map(fmt).concat(xs.map(local));\n"  # 14
        "}\n"
    ),
    "view.tsx": (
        'import { fmt } from "./app";\n'
        "export function Save(props: { onSave: () => void }) { return null; }\n"
        "function save(): void {}\n"
        "export function Panel(xs: number[]) {\n"
        "  xs.map(fmt);\n"  # 5: an imported function
        "  return <div onClick={save}><Save onSave={save} /></div>;\n"  # 6
        "}\n"
    ),
}


def _callers(conn: Connection, root: Path, fqn: str) -> set[tuple[str, int, str]]:
    return {(s.path, s.line, s.caller) for s in queries.callers(conn, root, fqn).sites}


def test_python_functions_and_methods_handed_over_are_used_there(tmp_path: Path) -> None:
    conn, root = index_files(tmp_path, PYTHON)
    assert _callers(conn, root, "shop.hooks.on_saved") == {("shop/cart.py", 17, "shop.cart.Cart::wire")}
    assert _callers(conn, root, "shop.cart.Cart::notify") == {("shop/cart.py", 18, "shop.cart.Cart::wire")}
    # the local `fmt` of wire (line 21) is not the module's function
    assert _callers(conn, root, "shop.cart.fmt") == {("shop/cart.py", 25, "shop.cart.main"),
                                                     ("shop/cart.py", 26, "shop.cart.main")}
    rows = conn.execute("SELECT target_fqn, line FROM relations WHERE kind = 'references'").fetchall()
    # no row for an attribute, a class, a built-in or a local; an imported value (TIMEOUT) gives one, as the
    # file cannot tell it from an imported function, but it names no function: no callers query matches it
    assert {(str(t), int(n)) for t, n in rows} == {
        ("shop.hooks.on_saved", 17), ("shop.cart.Cart::notify", 18), ("shop.cart.fmt", 25), ("shop.cart.fmt", 26),
        ("shop.hooks.TIMEOUT", 19)}


def test_script_functions_methods_and_jsx_handlers_handed_over_are_used_there(tmp_path: Path) -> None:
    conn, root = index_files(tmp_path, SCRIPT)
    assert _callers(conn, root, "app:View::onClick") == {("app.ts", 7, "app:View::wire")}
    assert _callers(conn, root, "app:handler") == {("app.ts", 12, "app:main")}
    # `const local = fmt` is no argument; `xs.map(local)` hands over a local
    assert _callers(conn, root, "app:fmt") == {("app.ts", 14, "app:main"), ("view.tsx", 5, "view:Panel")}
    # `save` the handler and `Save` the component: the columns compare without case (PHP's names do), the
    # answer keeps the one spelled as asked
    assert _callers(conn, root, "view:save") == {("view.tsx", 6, "view:Panel")}
    assert {(s.line, s.target_fqn) for s in queries.callers(conn, root, "view:Save").sites} == {(6, "view:Save")}
    fields = conn.execute("SELECT count(*) FROM relations WHERE target_fqn = 'app:View::state'").fetchone()
    assert fields[0] == 0


COMPONENTS = {
    "shop.ts": "export function checkout(): void {}\n",
    "Cart.vue": (
        '<script setup lang="ts">\nimport { ref } from "vue";\nimport { checkout } from "./shop";\n'
        "const count = ref(0);\nfunction save(): void {}\n</script>\n\n<template>\n"
        '  <button @click="save">Save</button>\n'  # 9
        '  <button @click="checkout">Pay</button>\n'  # 10
        "  <span>{{ count }}</span>\n</template>\n"  # 11: a value, not a function
    ),
    "Pay.svelte": (
        '<script lang="ts">\n  import { checkout } from "./shop";\n  let total = 0;\n  function pay() {}\n</script>\n\n'
        "<button onclick={pay}>Pay</button>\n"  # 7
        "<button on:click={checkout}>{total}</button>\n"  # 8
    ),
}


def test_a_components_event_handler_named_alone_is_used_by_its_template(tmp_path: Path) -> None:
    """Vue's `@click="save"` and Svelte's `onclick={pay}` hand the handler to the framework: before, a
    handler only a template named had no caller (vue-vben-admin: 247 of 400 sampled definitions had one,
    324 with these)."""
    conn, root = index_files(tmp_path, COMPONENTS)
    assert _callers(conn, root, "Cart.vue:save") == {("Cart.vue", 9, "Cart.vue")}
    assert _callers(conn, root, "Pay.svelte:pay") == {("Pay.svelte", 7, "Pay.svelte")}
    assert _callers(conn, root, "shop:checkout") == {("Cart.vue", 10, "Cart.vue"), ("Pay.svelte", 8, "Pay.svelte")}
    rows = conn.execute("SELECT target_name FROM relations WHERE kind = 'references'").fetchall()
    assert sorted(str(name) for (name,) in rows) == ["checkout", "checkout", "pay", "save"]  # not count, total


MODULES = {
    "app/__init__.py": "",
    "app/views.py": "def index(request):\n    return 1\n\n\nclass Page:\n    pass\n",
    "app/urls.py": (
        "from app import views\nfrom . import views as pages\n\n\n"
        "def path(route, view):\n    return route, view\n\n\n"
        'urlpatterns = [path("", views.index), path("p", pages.index), path("c", views.Page)]\n'  # 9
    ),
    "controllers/users.js": "exports.list = function list(req, res) {};\n",
    "routes.js": (
        'const users = require("./controllers/users");\nconst router = { get(p, h) {} };\n'
        'router.get("/users", users.list);\n'  # 3
        'router.get("/me", router.get);\n'  # 4: a member of a local object
    ),
}


def test_a_function_of_an_imported_module_handed_over_is_used_there(tmp_path: Path) -> None:
    """Django's `path("", views.index)` and Express's `router.get("/users", users.list)` with a required
    controller: the views and controllers of an application are named nowhere else."""
    conn, root = index_files(tmp_path, MODULES)
    assert _callers(conn, root, "app.views.index") == {("app/urls.py", 9, "app.urls")}
    assert _callers(conn, root, "controllers/users:list") == {("routes.js", 3, "routes")}
    rows = conn.execute("SELECT target_fqn FROM relations WHERE kind = 'references'").fetchall()
    assert sorted(str(t) for (t,) in rows) == ["app.views.index", "app.views.index", "controllers/users:list"]


MARKED = {
    "api.py": 'from fastapi import APIRouter\nrouter = APIRouter()\n\n\n@router.get("/items")\ndef read_items():\n'
              "    return []\n",
    "items.controller.ts": 'function Get(p: string) { return (t: object, k: string) => {}; }\n'
                           'export class ItemsController {\n  @Get("/items")\n  list(): string[] { return []; }\n}\n'
                           '/** Prices. */\n@Injectable()\nexport class PriceService {\n  quote() { return 1; }\n}\n',
    "app/CartController.php": '<?php\nnamespace App;\n\nclass CartController\n{\n    #[Route("/cart")]\n'
                              '    public function show(): string { return ""; }\n}\n',
}


def test_no_callers_of_a_decorated_definition_names_what_registers_it(tmp_path: Path) -> None:
    """A route handler is called by the framework its decorator or attribute registers it with: an empty
    answer says so, with the marks (before: the generic note; TypeScript recorded no decorators at all)."""
    conn, root = index_files(tmp_path, MARKED)
    notes = {fqn: queries.callers(conn, root, fqn).status.note
             for fqn in ("api.read_items", "items.controller:ItemsController::list", "App\\CartController::show",
                         "items.controller:PriceService", "items.controller:PriceService::quote")}
    assert notes["api.read_items"].startswith("no call site names api.read_items; it is marked router.get")
    assert "it is marked Get (a decorator or attribute)" in notes["items.controller:ItemsController::list"]
    assert "it is marked App\\Route (a decorator or attribute): what registers it that way" in \
        notes["App\\CartController::show"]
    # NestJS's and Angular's way: the decorators of an exported class are the export statement's
    assert "it is marked Injectable (a decorator or attribute)" in notes["items.controller:PriceService"]
    # a member of a class a framework registers (a container creates it, a component's hooks are called)
    assert "its class is marked Injectable (a decorator or attribute): where that registers the class" in \
        notes["items.controller:PriceService::quote"]
    assert "else search the code for 'quote' before treating it as unused" in \
        notes["items.controller:PriceService::quote"]
    doc = conn.execute("SELECT docblock FROM symbols WHERE fqn = 'items.controller:PriceService'").fetchone()[0]
    assert doc == "/** Prices. */"
    row = conn.execute("SELECT start_line FROM symbols WHERE fqn = 'items.controller:ItemsController::list'")
    assert row.fetchone()[0] == 4  # still the line of its name, after the decorator


FIELDS = {
    "api/types.py": "import graphene\nfrom rest_framework import serializers\nimport django_filters\n\n\n"
                    "class Order(graphene.ObjectType):\n    total = graphene.Int()\n    name = 'order'\n\n"
                    "    @staticmethod\n    def resolve_total(root, info):\n        return 1\n\n"
                    "    def get_name(self):\n        return self.name\n\n\n"
                    "class OrderSerializer(serializers.Serializer):\n    lines = serializers.SerializerMethodField()\n"
                    "    price = serializers.SerializerMethodField(method_name='compute_price')\n\n"
                    "    def get_lines(self, obj):\n        return []\n\n    def compute_price(self, obj):\n"
                    "        return 0\n\n    def get_price(self, obj):\n        return 0\n\n\n"
                    "class OrderFilter(django_filters.FilterSet):\n"
                    "    search = django_filters.CharFilter(method='filter_search')\n\n"
                    "    def filter_search(self, qs, name, value):\n        return qs\n",
}


def test_a_method_a_framework_calls_for_a_declared_field_is_used_at_the_field(tmp_path: Path) -> None:
    """graphene's `resolve_<field>`, Django REST framework's `get_<field>` of a `SerializerMethodField` (or its
    `method_name`), a `method="…"` argument (django-filter): each is used at its field's line. Before, none
    had a caller. A plain attribute beside a getter of its name is no field: `name = 'order'`, `get_name`."""
    conn, root = index_files(tmp_path, FIELDS)
    assert _callers(conn, root, "api.types.Order::resolve_total") == {("api/types.py", 7, "api.types.Order")}
    assert _callers(conn, root, "api.types.Order::get_name") == set()
    serializer = "api.types.OrderSerializer"
    assert _callers(conn, root, f"{serializer}::get_lines") == {("api/types.py", 19, serializer)}
    assert _callers(conn, root, f"{serializer}::compute_price") == {("api/types.py", 20, serializer)}
    assert _callers(conn, root, f"{serializer}::get_price") == set()  # its field names another method
    assert _callers(conn, root, "api.types.OrderFilter::filter_search") == {
        ("api/types.py", 33, "api.types.OrderFilter")}


VALUES = {
    "shop/events.py": "def on_paid(order):\n    return order\n\n\ndef on_refunded(order):\n    return order\n\n\n"
                      "HANDLERS = {\"paid\": on_paid}\n\n\ndef pick(kind):\n    if kind:\n        return on_refunded\n"
                      "    return None\n",
    "web/icons.tsx": "export function Flag() { return null; }\nexport function Globe() { return null; }\n"
                     "export function Heart() { return null; }\nfunction Star() { return null; }\n"
                     "function Moon() { return null; }\n\n"
                     "export const ICONS = { flag: Flag, Globe };\nexport const ALL = [Heart];\n"
                     "export function icon(on: boolean) {\n  const C = on ? Star : null;\n  return Moon;\n}\n",
}


def test_a_function_placed_in_a_map_a_list_or_returned_is_used_there(tmp_path: Path) -> None:
    """A dispatch table's handler (`{"paid": on_paid}`), a component in a map of icons, a list or a
    conditional, a function a factory returns: each is handed over for other code to call. Before, none
    was a row (dub: its .tsx definitions with a caller 330 -> 348 of 400)."""
    conn, root = index_files(tmp_path, VALUES)
    assert _callers(conn, root, "shop.events.on_paid") == {("shop/events.py", 9, "shop.events")}
    assert _callers(conn, root, "shop.events.on_refunded") == {("shop/events.py", 14, "shop.events.pick")}
    assert _callers(conn, root, "web/icons:Flag") == {("web/icons.tsx", 7, "web/icons")}
    assert _callers(conn, root, "web/icons:Globe") == {("web/icons.tsx", 7, "web/icons")}
    assert _callers(conn, root, "web/icons:Heart") == {("web/icons.tsx", 8, "web/icons")}
    assert _callers(conn, root, "web/icons:Star") == {("web/icons.tsx", 10, "web/icons:icon")}
    assert _callers(conn, root, "web/icons:Moon") == {("web/icons.tsx", 11, "web/icons:icon")}
