"""What the check sandbox could not enforce, in words, for the status comment and the change description.

A check that ran without part of its sandbox (no user namespaces, accepted by
`sandbox.allow_unisolated`; a limit only sampled; the installer's network) passed or failed under
weaker guarantees than the reader assumes, and a check the sandbox refused to run (no isolation, or
a worker running as root) says nothing about the change. Both are said where the user reads the
result — the status comment and the merge request description — never left in a record nobody
reads. The gates carry the facts (`GateResult.not_enforced`); this module only words them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from graph.schemas import GateResult
from project.sandbox import PROTECTIONS


def _plain(text: str) -> str:
    """One line, no Markdown code or table breakers: reasons may quote a tool's error message."""
    return re.sub(r"\s+", " ", text).replace("`", "'").replace("|", "/").strip()[:200]


def refused(gates: Sequence[GateResult]) -> list[GateResult]:
    """Gates the sandbox refused to run (they carry what would be missing, and the reason)."""
    return [g for g in gates if g.status == "not_run" and g.not_enforced]


def note(gates: Sequence[GateResult]) -> list[str]:
    """Markdown lines: which checks the sandbox refused to run and why, and what the others ran without."""
    lines: list[str] = []
    blocked = refused(gates)
    if blocked:
        names = ", ".join(g.name for g in blocked)
        missing = ", ".join(PROTECTIONS.get(k, k) for k in blocked[0].not_enforced)
        why, setting = _setting(blocked[0].detail)
        accept = f" An operator may accept that with `{setting}`." if setting else ""
        lines.append(
            f"**Checks not run** ({names}): the check sandbox refused them on this host ({_plain(why)}). "
            f"Running them would go without: {missing}.{accept}"
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


def _setting(detail: str) -> tuple[str, str]:
    """A refusal's reason (before its first `;`) and the setting that accepts it, quoted in the detail."""
    found = re.search(r"`(FORGEBOT_SANDBOX__[A-Z_]+=true)`", detail)
    return detail.split(";", 1)[0], found.group(1) if found else ""
