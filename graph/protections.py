"""What the check sandbox could not enforce, in words, for the status comment and the change description.

A check that ran without part of its sandbox (no user namespaces, accepted by
`sandbox.allow_unisolated`; network allowed for the installer) passed or failed under weaker
guarantees than the reader assumes, and a check the sandbox refused to run says nothing about the
change. Both are said where the user reads the result — the status comment and the merge request
description — never left in a record nobody reads. The gates carry the facts (`GateResult.not_enforced`);
this module only words them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from graph.schemas import GateResult
from project.sandbox import PROTECTIONS

ALLOW_SETTING = "FORGEBOT_SANDBOX__ALLOW_UNISOLATED=true"


def _plain(text: str) -> str:
    """One line, no Markdown code or table breakers: reasons may quote a tool's error message."""
    return re.sub(r"\s+", " ", text).replace("`", "'").replace("|", "/").strip()[:200]


def refused(gates: Sequence[GateResult]) -> list[GateResult]:
    """Gates not run because the sandbox could not isolate them (they carry what would be missing)."""
    return [g for g in gates if g.status == "not_run" and g.not_enforced]


def note(gates: Sequence[GateResult]) -> list[str]:
    """Markdown lines: which checks were not run for want of isolation, and what the others ran without."""
    lines: list[str] = []
    blocked = refused(gates)
    if blocked:
        names = ", ".join(g.name for g in blocked)
        why = _plain(next(iter(blocked[0].not_enforced.values())))
        missing = ", ".join(PROTECTIONS.get(k, k) for k in blocked[0].not_enforced)
        lines.append(
            f"**Checks not run** ({names}): the check sandbox cannot isolate them on this host ({why}). "
            f"Running them would go without: {missing}. An operator may accept that with `{ALLOW_SETTING}`."
        )
    grouped: dict[str, tuple[str, list[str]]] = {}
    for gate in gates:
        if gate in blocked:
            continue
        for key, why in gate.not_enforced.items():
            grouped.setdefault(key, (why, []))[1].append(gate.name)
    if grouped:
        lines.append("**Checks ran without these sandbox protections:**")
        lines += [f"- {PROTECTIONS.get(key, key)}: {_plain(why)} ({', '.join(names)})"
                  for key, (why, names) in grouped.items()]
    return lines
