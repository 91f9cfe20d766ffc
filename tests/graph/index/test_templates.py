"""Angular templates: the members a component's template uses are called from it (`templates`)."""

from __future__ import annotations

from pathlib import Path

from project.index import queries
from project.index.db import Connection
from project.index.templates import MAX_BYTES, uses
from tests.graph.index.conftest import index_files

TEMPLATE = """<p>{{ total }}</p>
<button (click)="checkout()" [class]="'total'" [disabled]="cart.total > 0">Pay</button>
<mat-autocomplete [displayWith]="displayFn"></mat-autocomplete>
@if (canPay()) {
  <span *ngIf="label | async">{{ label }}</span>
}
@let shown = total + 1;
<input [(ngModel)]="query" on-keyup="search(
  query)">
<a href="checkout">checkout</a>
"""


def test_a_template_uses_a_member_in_its_expressions_only() -> None:
    """Bindings, interpolations, control-flow blocks and `@let` are expressions; text, plain attributes,
    strings and a member of something else (`cart.total`) are not the component's member."""
    assert uses(TEMPLATE, "total") == [1, 7]
    assert uses(TEMPLATE, "checkout") == [2]
    assert uses(TEMPLATE, "displayFn") == [3]
    assert uses(TEMPLATE, "canPay") == [4]
    assert uses(TEMPLATE, "label") == [5]
    assert uses(TEMPLATE, "search") == [8]
    assert uses(TEMPLATE, "query") == [8, 9]
    assert uses(TEMPLATE, "cart") == [2]
    assert uses(TEMPLATE, "pay") == []


COMPONENT = ('import { Component } from "@angular/core";\nimport { Base } from "./base";\n\n'
             '@Component({ selector: "app-cart", templateUrl: "./cart.html" })\n'
             "export class CartComponent extends Base {\n  checkout() {}\n}\n")
FILES = {
    "web/base.ts": "export class Base {\n  reset() {}\n}\n",
    "web/cart.component.ts": COMPONENT,
    "web/cart.html": '<button (click)="checkout()">Pay</button>\n<a (click)="reset()">Clear</a>\n',
    # a decorator of another package named Component says nothing of a template
    "web/other.ts": 'import { Component } from "./mine";\n\n@Component({ templateUrl: "./cart.html" })\n'
                    "class Other {\n  checkout() {}\n}\n",
    # a template path out of the checkout gives no row
    "web/escape.component.ts": 'import { Component } from "@angular/core";\n\n'
                               '@Component({ templateUrl: "../../../etc/passwd" })\nclass Escape {\n  root() {}\n}\n',
}


def _index(tmp_path: Path, files: dict[str, str]) -> tuple[Connection, Path]:
    return index_files(tmp_path, files, [name for name in files if name.endswith(".ts")])


def _sites(conn: Connection, root: Path, fqn: str) -> set[tuple[str, int, str]]:
    return {(s.path, s.line, s.caller) for s in queries.callers(conn, root, fqn).sites if s.certainty == "resolved"}


def test_callers_of_a_components_member_include_its_templates_lines(tmp_path: Path) -> None:
    """Before, a handler only its template calls had no callers. A base class's method is used by the
    templates of the components that extend it."""
    conn, root = _index(tmp_path, FILES)
    cart = "web/cart.component:CartComponent"
    assert _sites(conn, root, f"{cart}::checkout") == {("web/cart.html", 1, cart)}
    assert _sites(conn, root, "web/base:Base::reset") == {("web/cart.html", 2, cart)}
    assert _sites(conn, root, "web/other:Other::checkout") == set()
    links = [tuple(row) for row in
             conn.execute("SELECT source_fqn, target_fqn, line FROM relations WHERE kind = 'template'")]
    assert links == [(cart, "web/cart.html", 4)]


def test_a_template_is_read_as_it_is_now_and_not_past_its_size(tmp_path: Path) -> None:
    """The template is read from the checkout when callers are asked for (an edit shows at once, no
    build); a file over MAX_BYTES is not a template and is not read."""
    conn, root = _index(tmp_path, FILES)
    fqn = "web/cart.component:CartComponent::checkout"
    (root / "web/cart.html").write_text('<p>x</p>\n\n<button (click)="checkout()">Pay</button>\n')
    assert _sites(conn, root, fqn) == {("web/cart.html", 3, "web/cart.component:CartComponent")}
    (root / "web/cart.html").write_text('<button (click)="checkout()">Pay</button>\n' + " " * MAX_BYTES)
    assert _sites(conn, root, fqn) == set()


def test_a_template_linked_out_of_the_checkout_is_not_read(tmp_path: Path) -> None:
    """A link to a file outside the checkout, whose text names the member, is not followed."""
    outside = tmp_path / "outside.html"
    outside.write_text('<button (click)="checkout()">Pay</button>\n')
    files = {name: text for name, text in FILES.items() if name != "web/cart.html"}
    conn, root = _index(tmp_path, files)
    (root / "web/cart.html").symlink_to(outside)
    assert _sites(conn, root, "web/cart.component:CartComponent::checkout") == set()


def test_the_impact_of_a_components_member_reaches_its_template(tmp_path: Path) -> None:
    """`impact` lists the template beside the code, and a template (read as it is now) is never stale."""
    conn, root = _index(tmp_path, FILES)
    answer = queries.impact(conn, root, "web/cart.component:CartComponent::checkout")
    assert [(n.path, n.line, n.distance) for n in answer.nodes] == [("web/cart.html", 1, 1)]
    assert answer.status.state == "ok"


def test_a_classs_callers_are_not_every_unresolved_super_call(tmp_path: Path) -> None:
    """Every class has a constructor: `super(…)` of a base the graph cannot see is a call named
    `constructor`, and it was listed (by name) among the callers of every class."""
    files = {**FILES, "web/strategy.ts": 'import { Strategy } from "passport";\n\nexport class Jwt extends '
                                         "Mixin(Strategy) {\n  constructor() {\n    super({});\n  }\n}\n",
             "web/use.ts": 'import { CartComponent } from "./cart.component";\n\nnew CartComponent();\n'}
    conn, root = _index(tmp_path, files)
    sites = queries.callers(conn, root, "web/cart.component:CartComponent").sites
    assert [(s.path, s.line, s.certainty) for s in sites] == [("web/use.ts", 3, "resolved")]
