"""Plan-target checks against the code graph: what blocks, what warns, and when names are not checked."""

from __future__ import annotations

from pathlib import Path

from foundation.settings import EmbedderSettings
from graph.checkout import index_checkout
from graph.plantargets import check_targets
from graph.schemas import Plan
from project.profiles import load_profile
from tests.graph.implement import route
from tests.graph.implement.conftest import Project
from tests.repos import init_repo


def _plan(title: str, *paths: str, context: tuple[str, ...] = ()) -> Plan:
    writable = list(dict.fromkeys([route.CALC, *paths]))
    return Plan.model_validate({"items": [route.item(1, title, *paths)],
                                "scope": {"writable": writable, "context_only": list(context)}})


def test_missing_files_and_classes_block_and_new_methods_warn(project: Project, tmp_path: Path) -> None:
    index = index_checkout(tmp_path / "data", "demo", project.root, "t1", EmbedderSettings(kind="off"))["index"]
    root = project.root
    missing = check_targets(_plan("Edit it", "src/Nope.php", context=("docs/gone.md",)), root, index, [])
    assert missing.blocking == ["item 1 names src/Nope.php, which does not exist and is not declared new",
                                "`docs/gone.md` is listed as context only, but no such file exists"]
    assert check_targets(_plan("Edit it", "src/Nope.php"), root, index, ["src/Nope.php"]).blocking == []
    unknown = check_targets(_plan("Make `Invoice::total` round", route.CALC), root, index, [])
    assert unknown.blocking == ["item 1 names `Invoice`, which the code graph does not know"]
    declared = check_targets(_plan("Use `Invoice`", route.CALC), root, index, ["src/Invoice.php"])
    assert declared.blocking == [] and declared.warnings  # a declared new file may define it
    new_method = check_targets(_plan("Add `Calculator::multiply`", route.CALC), root, index, [])
    assert new_method.blocking == [] and "does not exist yet" in new_method.warnings[0]
    fine = check_targets(_plan("Reuse `App\\Calculator::add` and `$total`", route.CALC), root, index, [])
    assert (fine.blocking, fine.warnings) == ([], [])


def test_names_are_not_checked_without_a_graph(project: Project, tmp_path: Path) -> None:
    assert not load_profile("python").search_only and not load_profile("php").search_only  # both have a grammar
    plan = _plan("Make `Invoice::total` round", route.CALC)
    no_grammar = check_targets(plan, project.root, "", [], symbols=False)
    assert no_grammar.blocking == [] and "has no code graph" in no_grammar.warnings[0]
    no_index = check_targets(plan, project.root, str(tmp_path / "missing.db"), [])
    assert no_index.blocking == [] and "no code index" in no_index.warnings[0]


def test_dotted_names_of_python_and_typescript_are_checked_and_only_warn(tmp_path: Path) -> None:
    """`Ledger.close()` is Python's and TypeScript's `Ledger::close`: a member the class lacks warns, and so
    does a class the graph does not know (a library's, `Path.read_text()`, is written the same way)."""
    root = tmp_path / "shop"
    (root / "billing").mkdir(parents=True)
    (root / "billing" / "refunds.py").write_text("class Ledger:\n    def close(self):\n        return 1\n")
    (root / "web").mkdir()
    (root / "web" / "cart.ts").write_text("export class Cart {\n  total(): number { return 1; }\n}\n")
    init_repo(root)
    index = index_checkout(tmp_path / "data", "shop", root, "t1", EmbedderSettings(kind="off"))["index"]

    def check(title: str) -> tuple[list[str], list[str]]:
        plan = Plan.model_validate({"items": [route.item(1, title, "billing/refunds.py")],
                                    "scope": {"writable": ["billing/refunds.py"], "context_only": []}})
        found = check_targets(plan, root, index, [])
        return found.blocking, found.warnings

    known = "Call `Ledger.close()`, `billing.refunds.Ledger`, `Cart.total()`, `self.close()` and `Ledger.RATE`"
    assert check(known) == ([], [])
    assert check("Round `Ledger.closee()` and `Cart.totl()`") == ([], [
        "item 1 names `Ledger.closee()`: `Ledger` has no `closee` yet (fine if the item adds it)",
        "item 1 names `Cart.totl()`: `Cart` has no `totl` yet (fine if the item adds it)"])
    blocking, warnings = check("Use `Path.read_text()` in `billing.refunds.Ledgr`")
    assert blocking == [] and [w.split(":")[0] for w in warnings] == [
        "item 1 names `Path.read_text()`", "item 1 names `billing.refunds.Ledgr`"]
    assert check("Make `Ledgr` round")[0] == ["item 1 names `Ledgr`, which the code graph does not know"]
