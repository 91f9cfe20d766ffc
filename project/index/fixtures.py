"""pytest fixtures: the tests and fixtures that request a fixture by naming it as a parameter.

No line calls a fixture: `def test_checkout(cart, client):` asks pytest for the fixtures `cart` and
`client`, and pytest calls them. A callers answer without these says "nothing names it" of a fixture
a thousand tests use, the question asked before changing it.

Which fixture of a name a test gets is pytest's rule of visibility: one in the test's own module
first, then one in the `conftest.py` of the nearest directory above it, then one of a plugin module
(`pytest_plugins = ["app.tests.fixtures"]`, a module of fixtures that is not a test module). A request
is listed for the fixture that rule gives it, so a fixture overridden in a sub-directory's conftest.py
is not listed for the tests that get the override. Read from the definitions' signatures (the graph
stores them, up to 400 characters: a parameter past that is not seen) when callers are asked for.
"""

from __future__ import annotations

import json
import posixpath
import re

from project.index.db import Connection
from project.index.results import CallSiteHit

MAX_REQUESTS = 100_000  # tests and fixtures whose signature holds the name (`api_client` is in `staff_api_client`)


def fixture_sites(conn: Connection, target: str) -> list[CallSiteHit]:
    """The tests and fixtures that get the fixture `target` by naming it as a parameter."""
    row = conn.execute("SELECT name, path, attributes FROM symbols WHERE fqn = ? AND kind IN ('function', 'method') "
                       "LIMIT 1", (target,)).fetchone()
    if row is None or not _fixture(str(row[2])):
        return []
    name = str(row[0])
    fixtures = [(str(fqn), str(path)) for fqn, path, marks in conn.execute(
        "SELECT fqn, path, attributes FROM symbols WHERE name = ? AND kind IN ('function', 'method')", (name,))
        if str(fqn).rsplit(".", 1)[-1].rsplit("::", 1)[-1] == name and _fixture(str(marks))]
    pattern = "%" + name.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    sites: list[CallSiteHit] = []
    for fqn, path, line, signature, requester, marks in conn.execute(
            "SELECT fqn, path, start_line, signature, name, attributes FROM symbols WHERE kind IN ('function', "
            "'method') AND signature LIKE ? ESCAPE '\\' AND (name LIKE 'test%' OR attributes LIKE '%fixture%') "
            "LIMIT ?", (pattern, MAX_REQUESTS)):
        if str(fqn) == target or not (str(requester).startswith("test") or _fixture(str(marks))):
            continue
        if _requests(str(signature), str(requester), name) and _visible(fixtures, str(path)) == target:
            sites.append(CallSiteHit(path=str(path), line=int(line), caller=str(fqn), target_name=name,
                                     target_fqn=target, certainty="resolved"))
    return sorted(sites, key=lambda site: (site.path, site.line))


def _fixture(marks: str) -> bool:
    """Marked `@pytest.fixture`, `@fixture` or another plugin's `fixture` (`@pytest_asyncio.fixture`)."""
    return "fixture" in marks and any(str(mark).rsplit(".", 1)[-1] == "fixture" for mark in json.loads(marks))


def _requests(signature: str, function: str, name: str) -> bool:
    """Whether `function`'s parameters, in its signature, include `name`."""
    start = signature.find(f"def {function}(")
    if start < 0:
        return False
    return re.search(rf"[(,]\s*\**{re.escape(name)}\s*[,):=]", signature[start + len(function) + 4:]) is not None


def _visible(fixtures: list[tuple[str, str]], path: str) -> str:
    """The fixture a test in `path` gets among `fixtures` (fqn, path) of one name: its own module's, the
    nearest conftest.py's above it, else the one plugin module's ("" when that is not one)."""
    own = [fqn for fqn, where in fixtures if where == path]
    if own:
        return own[0]
    directory = posixpath.dirname(path)
    conftests = [(where.count("/"), fqn) for fqn, where in fixtures if posixpath.basename(where) == "conftest.py"
                 and (posixpath.dirname(where) == "" or f"{directory}/".startswith(f"{posixpath.dirname(where)}/"))]
    if conftests:
        return max(conftests)[1]
    plugins = [fqn for fqn, where in fixtures
               if posixpath.basename(where) != "conftest.py" and not _test_module(where)]
    return plugins[0] if len(plugins) == 1 else ""


def _test_module(path: str) -> bool:
    """A test module's fixtures are its own (`test_*.py`, `*_test.py`)."""
    base = posixpath.basename(path)
    return base.startswith("test_") or base.endswith("_test.py")
