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


def _plan(title: str, *paths: str, context: tuple[str, ...] = ()) -> Plan:
    writable = list(dict.fromkeys([route.CALC, *paths]))
    return Plan.model_validate({"items": [route.item(1, title, *paths)],
                                "scope": {"writable": writable, "context_only": list(context)}})


def test_missing_files_and_classes_block_and_new_methods_warn(project: Project, tmp_path: Path) -> None:
    index = index_checkout(tmp_path / "data", "demo", project.root, "t1", EmbedderSettings(kind="off"))["index"]
    root = project.root
    missing = check_targets(_plan("Edit it", "src/Nope.php", context=("docs/gone.md",)), root, index, [])
    assert missing.blocking == ["item 1 names src/Nope.php, which does not exist and is not declared new",
                                "docs/gone.md is context only but does not exist"]
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
