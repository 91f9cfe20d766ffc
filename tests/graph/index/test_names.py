"""PHP's name resolution rules, including the corner cases that differ between classes and functions."""

from __future__ import annotations

from project.index.names import NameTable


def _table() -> NameTable:
    table = NameTable("App\\Http")
    table.add("class", "\\Vendor\\Lib\\Client", "")
    table.add("class", "Vendor\\Models", "M")
    table.add("function", "Vendor\\Lib\\helper")
    table.add("const", "Vendor\\Lib\\LIMIT")
    return table


def test_unqualified_class_uses_import_then_current_namespace() -> None:
    table = _table()
    assert table.resolve_class("Client") == "Vendor\\Lib\\Client"
    assert table.resolve_class("client") == "Vendor\\Lib\\Client"  # class names are case-insensitive
    assert table.resolve_class("Request") == "App\\Http\\Request"


def test_qualified_class_resolves_its_first_segment_through_an_alias() -> None:
    table = _table()
    assert table.resolve_class("M\\User") == "Vendor\\Models\\User"
    assert table.resolve_class("Sub\\Thing") == "App\\Http\\Sub\\Thing"


def test_fully_qualified_and_namespace_relative_names() -> None:
    table = _table()
    assert table.resolve_class("\\Client") == "Client"
    assert table.resolve_class("namespace\\Kernel") == "App\\Http\\Kernel"
    assert table.resolve_class("\\ Spaced \\ Name") == "Spaced\\Name"


def test_function_keeps_the_global_fallback_only_when_unqualified_and_not_imported() -> None:
    table = _table()
    assert table.resolve_function("strlen") == ("App\\Http\\strlen", "strlen")
    assert table.resolve_function("helper") == ("Vendor\\Lib\\helper", "")
    assert table.resolve_function("\\strlen") == ("strlen", "")
    assert table.resolve_function("M\\make") == ("Vendor\\Models\\make", "")


def test_global_namespace_has_no_fallback() -> None:
    assert NameTable("").resolve_function("strlen") == ("strlen", "")
    assert NameTable("").resolve_class("Foo") == "Foo"


def test_function_imports_do_not_shadow_class_names() -> None:
    table = _table()
    assert table.resolve_class("helper") == "App\\Http\\helper"
    assert table.imports()["function helper"] == "Vendor\\Lib\\helper"
    assert table.imports()["const LIMIT"] == "Vendor\\Lib\\LIMIT"
