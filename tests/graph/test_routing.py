"""Routing by mode: a mode without a route fails clearly before any node runs."""

import pytest

from graph import routing


def test_every_available_mode_has_an_entry_node() -> None:
    assert set(routing.AVAILABLE_MODES) == set(routing.ENTRY_NODES)
    for mode in routing.AVAILABLE_MODES:
        assert routing.route_by_mode({"mode": mode}) == mode


def test_unknown_mode_is_refused() -> None:
    with pytest.raises(routing.ModeUnavailable, match="deploy"):
        routing.route_by_mode({"mode": "deploy"})
