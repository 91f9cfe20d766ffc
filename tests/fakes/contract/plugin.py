"""pytest plugin: a contract violation fails the test during which the fake forge saw it.

Each test phase (setup, call, teardown) notes where the ledger stood before it and fails when new
violations appeared, naming them. At the end each process's counts are added up (pytest-xdist
workers send theirs to the controller) and printed: requests and responses checked and failed, and
the operations used per forge.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Generator
from typing import Any

import pytest

from tests.fakes.contract import documents, surface
from tests.fakes.contract.ledger import LEDGER

_KEY = "forge_contract"
_totals: list[dict[str, Any]] = []


UNMATCHED = ("no documented operation has this method and path", "not under a forge's API root")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "wrong_forge_address: the test points the product at a wrong forge URL on "
                                       "purpose; its requests outside the forges' APIs are expected, not violations")


def _guard(item: pytest.Item, phase: str) -> Generator[None, Any, Any]:
    mark = len(LEDGER.violations)
    result = yield
    if item.get_closest_marker("wrong_forge_address") is not None:
        LEDGER.excuse(mark, UNMATCHED)
    found = LEDGER.since(mark)
    if found:
        listed = "\n  ".join(dict.fromkeys(found))
        pytest.fail(f"the fake forge saw {len(found)} forge contract violation(s) during {phase}:\n  {listed}",
                    pytrace=False)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, Any, Any]:
    return (yield from _guard(item, "setup"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    return (yield from _guard(item, "the test"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, Any, Any]:
    return (yield from _guard(item, "teardown"))


def pytest_sessionfinish(session: pytest.Session) -> None:
    output = getattr(session.config, "workeroutput", None)
    if output is not None:  # an xdist worker: the controller prints the totals
        output[_KEY] = json.dumps(LEDGER.summary())


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    found = getattr(node, "workeroutput", {}).get(_KEY)
    if found:
        _totals.append(json.loads(found))


def totals() -> dict[str, Any]:
    """This process's ledger plus every finished worker's."""
    parts = [LEDGER.summary(), *_totals]
    merged: dict[str, Any] = {k: sum(p[k] for p in parts) for k in (
        "requests_checked", "requests_failed", "requests_excused", "responses_checked", "responses_failed",
        "responses_unchecked")}
    for key in ("operations", "unchecked", "webhooks"):
        counter: Counter[str] = Counter()
        for part in parts:
            counter.update(part[key])
        merged[key] = dict(counter)
    merged["violations"] = [v for p in parts for v in p["violations"]]
    return merged


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if getattr(terminalreporter.config, "workeroutput", None) is not None:
        return
    if not documents.available():
        terminalreporter.write_line("forge contract: shared/forge-contract not found, fake forge traffic unchecked")
        return
    found = totals()
    if not found["requests_checked"] and not found["webhooks"]:
        return
    write = terminalreporter.write_line
    write(f"forge contract: requests {found['requests_checked']} checked, {found['requests_failed']} failed "
          f"({found['requests_excused']} more on purpose: wrong addresses, the layer's own tests); "
          f"responses {found['responses_checked']} checked, {found['responses_failed']} failed, "
          f"{found['responses_unchecked']} without a published schema or example")
    by_forge: dict[str, list[str]] = {}
    for key, count in sorted(found["operations"].items()):
        forge, rest = key.split(" ", 1)
        by_forge.setdefault(forge, []).append(f"{rest}  x{count}")
    for forge, ops in by_forge.items():
        write(f"forge contract: {forge} operations used: {len(ops)}")
        for line in ops:
            write(f"    {line}")
    met = {" ".join(key.split(" ")[3:]) if " /graphql " not in key else key.split(" /graphql ", 1)[1]
           for key in found["operations"]}
    unmet = sorted(f"{u.forge} {u.operation}" for u in surface.USES if u.operation not in met)
    if unmet:
        write("forge contract: recorded operations this run did not meet: " + ", ".join(unmet))
    if found["unchecked"]:
        write("forge contract: answers without a published schema or example: " +
              ", ".join(f"{k} x{v}" for k, v in sorted(found["unchecked"].items())))
    if found["webhooks"]:
        write("forge contract: webhook deliveries tried (event, result: count):")
        for key, count in sorted(found["webhooks"].items()):
            write(f"    {key}: {count}")
    if found["violations"]:
        write(f"forge contract: {len(found['violations'])} violations, distinct:")
        for line in sorted(set(found["violations"])):
            write(f"    {line}")
