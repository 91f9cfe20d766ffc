"""Angular component templates: where a component's template uses its members.

A component's methods are mostly called by its template, a separate file its decorator names
(`@Component({templateUrl: './cart.html'})`): `(click)="checkout()"`, `[displayWith]="displayFn"`,
`{{ total }}`, `@if (canPay()) {`. No line of TypeScript calls them, so a callers answer without the
template says "nothing names it" of a button's handler.

The extractor records the link, a `template` row from the class to the template's path (`script_graph`);
the template is read here, when callers are asked for, from the checkout: it is always the current file,
and the graph holds no HTML. What is read is untrusted: the path stays inside the checkout (a link out
of it is not followed) and a file over `MAX_BYTES` is not read.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from project.index.db import Connection
from project.index.hierarchy import descendants, split_member
from project.index.results import CallSiteHit

MAX_BYTES = 1 << 20  # a template is a few kilobytes; a larger file is not one
MAX_TEMPLATES = 64  # templates read for one answer (a base class of many components)

# Where a template holds expressions: a binding's value (`(click)="…"`, `[value]="…"`, `[(ngModel)]="…"`,
# `*ngIf="…"`, `bind-`/`on-` forms), an interpolation (`{{ … }}`), a control-flow block's parentheses
# (`@if (…)`, `@for (…; track …)`, `@switch (…)`, `@case (…)`, `@defer (when …)`) and `@let x = …;`.
_EXPRESSIONS = re.compile(
    r"""(?:[(\[*][\w.\-:@()\[\]]*|\b(?:bind|on|bindon)-[\w.\-:]+)\s*=\s*(?:"([^"]*)"|'([^']*)')"""
    r"|\{\{(.*?)\}\}"
    r"|@(?:if|else\s+if|for|switch|case|defer)\s*\(((?:[^()]|\([^()]*\))*)\)"
    r"|@let\s+[\w$]+\s*=\s*([^;]*);",
    re.DOTALL,
)
_STRINGS = re.compile(r"'[^']*'|\"[^\"]*\"|`[^`]*`")


def template_sites(conn: Connection, root: Path, target: str) -> list[CallSiteHit]:
    """The lines of the templates of `target`'s class (and of its subclasses) that use its member:
    `Cart::checkout` is used by `(click)="checkout()"` in the template `Cart`'s decorator names."""
    owner, member = split_member(target)
    # most repositories have no component: one look at a small index, not a walk of the subclasses
    if not member or conn.execute("SELECT 1 FROM relations WHERE kind = 'template' AND source_fqn >= '' "
                                  "LIMIT 1").fetchone() is None:
        return []
    owners = [owner, *descendants(conn, owner)]
    marks = ",".join("?" * len(owners))
    rows = conn.execute(
        f"SELECT DISTINCT source_fqn, target_fqn FROM relations WHERE kind = 'template' AND source_fqn IN ({marks}) "
        "ORDER BY target_fqn LIMIT ?", (*owners, MAX_TEMPLATES)).fetchall()
    sites: list[CallSiteHit] = []
    for component, path in rows:
        source = _read(root, str(path))
        sites.extend(CallSiteHit(path=str(path), line=line, caller=str(component), target_name=member,
                                 target_fqn=f"{component}::{member}", certainty="resolved")
                     for line in uses(source, member))
    return sites


def uses(template: str, name: str) -> list[int]:
    """The lines where the template's expressions name `name` as the component's own (`checkout()`,
    `displayFn`; not `cart.checkout()`, a member of something else)."""
    if name not in template:
        return []
    named = re.compile(rf"(?<![\w$.]){re.escape(name)}(?![\w$])")
    lines: list[int] = []
    for match in _EXPRESSIONS.finditer(template):
        group = next(i for i in range(1, 6) if match.group(i) is not None)
        # a string in the expression (`[class]="'active'"`) names nothing: blanked, its offsets kept
        expression = _STRINGS.sub(lambda quoted: " " * len(quoted.group()), match.group(group))
        for found in named.finditer(expression):
            line = template.count("\n", 0, match.start(group) + found.start()) + 1
            if not lines or lines[-1] != line:
                lines.append(line)
    return lines


def _read(root: Path, path: str) -> str:
    """The template's text, or "" when it is not a file of the checkout or is too large to be one."""
    base = os.path.realpath(root)
    full = os.path.realpath(os.path.join(base, path))
    if os.path.commonpath([base, full]) != base or not os.path.isfile(full):
        return ""
    try:
        with open(full, "rb") as file:
            data = file.read(MAX_BYTES + 1)
    except OSError:
        return ""
    return "" if len(data) > MAX_BYTES else data.decode("utf-8", "replace")
