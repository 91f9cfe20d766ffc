"""Extraction from the PHP fixtures: definitions, structure and call resolution, PHP 8.x included."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from project.index.model import ParsedFile, Relation
from project.index.parse import content_hash, parse_source
from tests.graph.index.conftest import FIXTURES

SRC = FIXTURES / "src"


def _parse(rel: str) -> ParsedFile:
    return parse_source(f"src/{rel}", (SRC / rel).read_bytes())


def _defs(parsed: ParsedFile) -> dict[str, tuple[str, int, int]]:
    return {s.fqn: (s.kind, s.start_line, s.end_line) for s in parsed.symbols}


def _calls(parsed: ParsedFile, source: str) -> list[tuple[str, str, int]]:
    return [
        (r.target_name, r.target_fqn, r.line)
        for r in parsed.relations
        if r.kind == "calls" and r.source_fqn == source
    ]


def test_class_members_with_kinds_and_line_ranges() -> None:
    defs = _defs(_parse("Model/Circle.php"))
    circle = "Acme\\Geometry\\Model\\Circle"
    assert defs[circle] == ("class", 11, 81)  # attributes belong to the declaration
    assert defs[f"{circle}::SIDES"] == ("constant", 20, 20)
    assert defs[f"{circle}::KIND"] == ("constant", 20, 20)
    assert defs[f"{circle}::$clock"] == ("property", 22, 22)
    assert defs[f"{circle}::$radius"] == ("property", 25, 25)  # promoted constructor parameters
    assert defs[f"{circle}::$created"] == ("property", 26, 26)
    assert defs[f"{circle}::describe"] == ("method", 36, 47)
    assert not any("write" in fqn for fqn in defs)  # anonymous class members have no name to index


def test_enum_cases_constants_and_methods() -> None:
    defs = _defs(_parse("Model/Color.php"))
    color = "Acme\\Geometry\\Model\\Color"
    assert defs[color][0] == "enum"
    assert defs[f"{color}::Red"] == ("enum_case", 9, 9)
    assert defs[f"{color}::Green"][0] == "enum_case"
    assert defs[f"{color}::DEFAULT"][0] == "constant"
    assert defs[f"{color}::fallback"][0] == "method"


def test_interfaces_traits_functions_and_namespace_constants() -> None:
    shapes = _defs(_parse("Contracts/Shape.php"))
    assert shapes["Acme\\Geometry\\Contracts\\Shape"][0] == "interface"
    assert shapes["Acme\\Geometry\\Contracts\\Shape::UNIT"][0] == "constant"
    assert _defs(_parse("Traits/Greets.php"))["Acme\\Geometry\\Traits\\Greets::name"][0] == "method"
    helpers = _defs(_parse("Support/helpers.php"))
    assert helpers["Acme\\Geometry\\Support\\PRECISION"][0] == "constant"
    assert helpers["Acme\\Geometry\\Support\\legacy"][0] == "function"  # conditionally declared
    multi = _defs(_parse("multi.php"))
    assert {"Acme\\One\\ANSWER", "Acme\\One\\helper", "Acme\\One\\Thing::run", "global_helper"} <= set(multi)


def test_signature_docblock_and_attributes() -> None:
    parsed = _parse("Model/Circle.php")
    circle = next(s for s in parsed.symbols if s.fqn == "Acme\\Geometry\\Model\\Circle")
    assert circle.signature == "final class Circle extends Base implements Area"
    assert circle.docblock.startswith("/**") and "A circle." in circle.docblock
    model = "Acme\\Geometry\\Model"
    assert circle.attributes == ("Attribute", f"{model}\\Tagged", f"{model}\\Deprecated")
    describe = next(s for s in parsed.symbols if s.name == "describe")
    assert describe.signature == "public function describe(string $prefix): string"
    assert describe.parent_fqn == "Acme\\Geometry\\Model\\Circle"
    shape = next(s for s in _parse("Contracts/Shape.php").symbols if s.fqn.endswith("Shape::describe"))
    assert "@throws \\DomainException" in shape.docblock


def test_structure_relations_resolve_aliases_and_group_imports() -> None:
    parsed = _parse("Model/Circle.php")
    structural = {(r.kind, r.target_fqn) for r in parsed.relations if r.kind != "calls"}
    assert ("extends", "Acme\\Geometry\\Model\\Base") in structural
    assert ("implements", "Acme\\Geometry\\Contracts\\Measurable") in structural  # `Measurable as Area`
    assert ("uses_trait", "Acme\\Geometry\\Traits\\Greets") in structural
    assert ("imports", "Acme\\Geometry\\Contracts\\Shape") in structural  # grouped use
    assert parsed.imports["area"] == "Acme\\Geometry\\Contracts\\Measurable"
    assert parsed.imports["function format_area"] == "Acme\\Geometry\\Support\\format_area"
    assert parsed.imports["const PRECISION"] == "Acme\\Geometry\\Support\\PRECISION"
    interfaces = {r.target_fqn for r in _parse("Contracts/Shape.php").relations if r.kind == "extends"}
    assert interfaces == {"Acme\\Geometry\\Contracts\\Measurable", "Countable"}


def test_receivers_resolved_where_statically_known() -> None:
    calls = _calls(_parse("Model/Circle.php"), "Acme\\Geometry\\Model\\Circle::describe")
    clock, circle = "Acme\\Geometry\\Support\\Clock", "Acme\\Geometry\\Model\\Circle"
    assert ("now", f"{clock}::now", 38) in calls  # promoted property type
    assert ("tick", f"{clock}::tick", 39) in calls  # nullsafe call on a typed property
    assert ("__construct", f"{circle}::__construct", 40) in calls  # new
    assert ("area", f"{circle}::area", 41) in calls  # variable assigned `new Circle`
    assert ("unit", f"{circle}::unit", 42) in calls  # self::
    assert ("unit", f"{circle}::unit", 43) in calls  # static::
    assert ("format_area", "Acme\\Geometry\\Support\\format_area", 44) in calls  # first-class callable
    assert ("greet", f"{circle}::greet", 46) in calls  # $this, inherited from a trait


def test_parent_typed_parameter_and_parenthesised_new() -> None:
    circle = _parse("Model/Circle.php")
    scale = _calls(circle, "Acme\\Geometry\\Model\\Circle::scale")
    assert ("scale", "Acme\\Geometry\\Model\\Base::scale", 52) in scale  # parent::
    assert ("now", "Acme\\Geometry\\Support\\Clock::now", 51) in scale  # typed arrow-function parameter
    unit = _calls(circle, "Acme\\Geometry\\Model\\Circle::unit")
    assert ("withClock", "Acme\\Geometry\\Model\\Circle::withClock", 57) in unit
    assert ("system", "Acme\\Geometry\\Support\\Clock::system", 57) in unit
    with_clock = _calls(circle, "Acme\\Geometry\\Model\\Circle::withClock")
    assert ("tick", "Acme\\Geometry\\Support\\Clock::tick", 62) in with_clock


def test_unknown_receivers_keep_the_method_name() -> None:
    log = _calls(_parse("Model/Circle.php"), "Acme\\Geometry\\Model\\Circle::log")
    assert ("write", "", 79) in log  # receiver is an anonymous class
    assert ("flush", "", 76) in log  # $this of an anonymous class is not Circle


def test_function_calls_keep_namespace_candidate_and_global_fallback() -> None:
    relations = [r for r in _parse("Support/helpers.php").relations if r.kind == "calls"]
    by_name = {r.target_name: r for r in relations}
    assert by_name["number_format"].target_fqn == "Acme\\Geometry\\Support\\number_format"
    assert by_name["number_format"].fallback_fqn == "number_format"
    assert by_name["usleep"] == Relation("calls", "Acme\\Geometry\\Support\\Clock::tick", "usleep", "usleep",
                                         "src/Support/helpers.php", 21)  # fully qualified: no fallback
    assert "function_exists" in by_name and by_name["function_exists"].source_fqn == ""  # file-level code
    assert not any(r.target_name == "isset" for r in relations)


def test_braced_namespaces_and_anonymous_class_parent() -> None:
    calls = [(r.source_fqn, r.target_fqn) for r in _parse("multi.php").relations if r.kind == "calls"]
    assert ("Acme\\One\\Thing::run", "Acme\\One\\helper") in calls
    assert calls.count(("global_helper", "Acme\\One\\Thing::run")) == 2  # (new Thing)->run(), parent::run()


def test_computed_method_names_are_not_call_sites_by_name() -> None:
    parsed = parse_source("x.php", b"<?php\n$o->{__FUNCTION__}();\nFoo::{'m'}();\n$o->{$x}();\n$o->real();\n")
    assert [r.target_name for r in parsed.relations] == ["real"]


@pytest.mark.parametrize(
    "source",
    [b"<?php\nclass Broken {\n  public function a( {\n}\n", b"<?php\nfunction f() { return 1 + ; }\n"],
)
def test_syntax_errors_are_reported(source: bytes) -> None:
    assert parse_source("x.php", source).has_errors


def test_content_hash_is_the_git_blob_id(repo: Path) -> None:
    out = subprocess.run(
        ["git", "-C", str(repo), "hash-object", "src/multi.php"], capture_output=True, check=True
    )
    assert content_hash((repo / "src/multi.php").read_bytes()) == out.stdout.decode().strip()


DOCUMENTED = b"""<?php
namespace Shop;

use Shop\\Models\\Cart;

class Checkout
{
    /** @var Cart */
    private $cart;
    /** @var Cart|Order */
    private $either;

    /**
     * @param Cart|null $cart the cart
     * @param Item[] $items
     * @param int $count
     * @param \\Shop\\Payment $payment
     */
    public function pay($cart, $items, $count, Order $payment)
    {
        $cart->total();
        $items->first();
        $payment->charge();
        $this->cart->lines();
        $this->either->lines();
    }
}

/** @param Cart $cart */
function checkout_total($cart) { return $cart->total(); }
"""


def test_a_docblock_types_the_parameters_and_properties_that_declare_none() -> None:
    """WordPress's and older Laravel's way: `@param Cart $cart` and `@var Cart` type what PHP leaves
    untyped. A declared type is the parameter's own (`Order $payment` over its `@param`); an array, a
    scalar or a union of two classes types nothing."""
    relations = parse_source("src/Checkout.php", DOCUMENTED).relations
    calls = {(r.target_name, r.line): r.target_fqn for r in relations if r.kind == "calls"}
    assert calls[("total", 21)] == "Shop\\Models\\Cart::total"
    assert calls[("first", 22)] == ""
    assert calls[("charge", 23)] == "Shop\\Order::charge"
    assert calls[("lines", 24)] == "Shop\\Models\\Cart::lines"
    assert calls[("lines", 25)] == ""
    assert calls[("total", 30)] == "Shop\\Models\\Cart::total"
