"""pytest fixtures: the tests and fixtures that request one by naming it are its callers (`fixtures`)."""

from __future__ import annotations

from pathlib import Path

from project.index import queries
from project.index.db import Connection
from tests.graph.index.conftest import index_files

FILES = {
    "conftest.py": "import pytest\n\n\n@pytest.fixture\ndef db():\n    return 1\n\n\n"
                   "@pytest.fixture\ndef cart(db):\n    return db\n",
    "tests/test_cart.py": "def test_total(cart):\n    assert cart\n\n\ndef test_empty(\n    db,\n    cart,\n):\n"
                          "    assert db\n\n\ndef helper(cart):\n    return cart\n\n\ndef test_other(carts):\n"
                          "    assert carts\n",
    # a sub-directory overrides `db`: its tests get that one
    "tests/api/conftest.py": "import pytest\n\n\n@pytest.fixture\ndef db():\n    return 2\n",
    "tests/api/test_api.py": "def test_call(db):\n    assert db\n",
    # a test module's own fixture is its own
    "tests/test_local.py": "import pytest\n\n\n@pytest.fixture\ndef token():\n    return 't'\n\n\n"
                           "def test_token(token):\n    assert token\n",
    "tests/test_elsewhere.py": "def test_token_too(token):\n    assert token\n",
    # a plugin module of fixtures (`pytest_plugins`) serves every test
    "app/testing/fixtures.py": "from pytest import fixture\n\n\n@fixture\ndef user():\n    return 'u'\n",
    "tests/test_user.py": "class TestUser:\n    def test_name(self, user):\n        assert user\n",
}


def _index(tmp_path: Path) -> tuple[Connection, Path]:
    return index_files(tmp_path, FILES)


def _sites(conn: Connection, root: Path, fqn: str) -> set[tuple[str, int, str]]:
    return {(s.path, s.line, s.caller) for s in queries.callers(conn, root, fqn).sites if s.certainty == "resolved"}


def test_a_fixtures_callers_are_the_tests_and_fixtures_that_request_it(tmp_path: Path) -> None:
    """Before, a fixture's callers were empty: no line calls it, pytest does for each parameter named so
    (the site is the requesting definition's first line). A helper with a parameter of that name, or a
    parameter of another name, requests nothing."""
    conn, root = _index(tmp_path)
    assert _sites(conn, root, "conftest.cart") == {
        ("tests/test_cart.py", 1, "tests.test_cart.test_total"),
        ("tests/test_cart.py", 5, "tests.test_cart.test_empty")}
    assert _sites(conn, root, "app.testing.fixtures.user") == {
        ("tests/test_user.py", 2, "tests.test_user.TestUser::test_name")}


def test_the_request_goes_to_the_fixture_pytest_gives(tmp_path: Path) -> None:
    """The nearest conftest.py's fixture, a test module's own fixture for its own tests only."""
    conn, root = _index(tmp_path)
    assert _sites(conn, root, "conftest.db") == {
        ("conftest.py", 10, "conftest.cart"), ("tests/test_cart.py", 5, "tests.test_cart.test_empty")}
    assert _sites(conn, root, "tests.api.conftest.db") == {("tests/api/test_api.py", 1, "tests.api.test_api.test_call")}
    assert _sites(conn, root, "tests.test_local.token") == {
        ("tests/test_local.py", 9, "tests.test_local.test_token")}


def test_the_impact_of_a_fixture_reaches_its_tests(tmp_path: Path) -> None:
    conn, root = _index(tmp_path)
    nodes = queries.impact(conn, root, "tests.api.conftest.db").nodes
    assert [(n.fqn, n.distance) for n in nodes] == [("tests.api.test_api.test_call", 1)]
