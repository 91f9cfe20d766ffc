"""Render the chart with a small Go text/template + sprig interpreter, the subset the chart uses.

`helm` cannot be installed on our build machines (STYLE.md §4.13), so without this the templates
would first execute in the project's GitLab pipeline. The interpreter follows Go's rules where a
chart usually breaks: `{{-`/`-}}` whitespace trimming, variable scope, map keys ranged in sorted
order, numbers from values being float64 (so `gt` of a float and an int is an error, as in Go, and
1000000 prints as `1e+06`), missing keys an error (like `helm lint --strict`), and `toYaml` sorting
keys. Anything outside the subset raises `TemplateError` instead of guessing.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml


class TemplateError(Exception):
    """The template uses something this interpreter (or Go) refuses."""


class ChartFail(TemplateError):
    """The chart called `fail`: a refused configuration."""


_ACTION = re.compile(r"\{\{(-\s)?(.*?)(\s-)?\}\}", re.S)
_TOKEN = re.compile(
    r'\s*(?:("(?:\\.|[^"\\])*")|(:=)|([(),|])|(\$[A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*)'
    r"|((?:\.[A-Za-z0-9_]+)+|\.)|(-?\d+(?:\.\d+)?)|([A-Za-z_][A-Za-z0-9_]*))"
)


@dataclass
class Node:
    kind: str  # text | action | if | with | range | define
    text: str = ""
    pipe: Any = None
    body: list[Node] = field(default_factory=list)
    orelse: list[Node] = field(default_factory=list)
    names: list[str] = field(default_factory=list)


def _lex(source: str) -> list[tuple[str, str]]:
    """Split into ("text", s) and ("action", s) pieces, applying Go's trim markers."""
    pieces: list[tuple[str, str]] = []
    pos, trim_next = 0, False
    for match in _ACTION.finditer(source):
        text = source[pos : match.start()]
        if trim_next:
            text = text.lstrip(" \t\r\n")
        if match.group(1):
            text = text.rstrip(" \t\r\n")
        pieces.append(("text", text))
        pieces.append(("action", match.group(2).strip()))
        pos, trim_next = match.end(), bool(match.group(3))
    tail = source[pos:]
    pieces.append(("text", tail.lstrip(" \t\r\n") if trim_next else tail))
    return pieces


def _tokens(expr: str) -> list[str]:
    out, pos = [], 0
    while pos < len(expr.rstrip()):
        match = _TOKEN.match(expr, pos)
        if not match or match.end() == pos:
            raise TemplateError(f"cannot parse {expr!r} at {pos}")
        out.append(next(g for g in match.groups() if g is not None))
        pos = match.end()
    return out


def _parse_pipe(tokens: list[str], pos: int = 0, stop: str = "") -> tuple[Any, int]:
    decl: list[str] = []
    if len(tokens) > pos + 1 and tokens[pos].startswith("$") and tokens[pos + 1] in (":=", ","):
        while tokens[pos] != ":=":
            if tokens[pos] != ",":
                decl.append(tokens[pos])
            pos += 1
        pos += 1
    commands: list[list[Any]] = [[]]
    while pos < len(tokens) and tokens[pos] != stop:
        tok = tokens[pos]
        if tok == "|":
            commands.append([])
        elif tok == "(":
            inner, pos = _parse_pipe(tokens, pos + 1, ")")
            commands[-1].append(("pipe", inner))
        else:
            commands[-1].append(("tok", tok))
        pos += 1
    return {"decl": decl, "commands": commands}, pos


def _parse(pieces: list[tuple[str, str]], pos: int, until: tuple[str, ...]) -> tuple[list[Node], int, str]:
    nodes: list[Node] = []
    while pos < len(pieces):
        kind, content = pieces[pos]
        pos += 1
        if kind == "text":
            nodes.append(Node("text", text=content))
            continue
        if content.startswith("/*"):
            continue
        word, _, rest = content.partition(" ")
        if word in until:
            return nodes, pos, content
        if word in ("if", "with", "range"):
            node = Node(word, pipe=_parse_pipe(_tokens(rest))[0])
            node.body, pos, ended = _parse(pieces, pos, ("else", "end"))
            if ended.startswith("else"):
                if ended != "else":
                    raise TemplateError(f"unsupported {ended!r}")
                node.orelse, pos, _ = _parse(pieces, pos, ("end",))
            nodes.append(node)
        elif word == "define":
            node = Node("define", text=json.loads(rest.strip()))
            node.body, pos, _ = _parse(pieces, pos, ("end",))
            nodes.append(node)
        elif word in ("else", "end", "template", "block"):
            raise TemplateError(f"unexpected or unsupported {word!r}")
        else:
            nodes.append(Node("action", pipe=_parse_pipe(_tokens(content))[0]))
    if until:
        raise TemplateError(f"missing {until}")
    return nodes, pos, ""


def go_str(value: Any) -> str:
    """Print a value as Go's fmt %v does for the types values can hold."""
    if value is None:
        return ""  # helm replaces "<no value>" with ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _go_float(value)
    if isinstance(value, dict | list):
        raise TemplateError("printing a map or list gives Go syntax, not YAML; use toYaml")
    return str(value)


def _go_float(value: float) -> str:
    """strconv.FormatFloat(v, 'g', -1, 64): shortest digits, %e from exponent 6 (1000000 -> 1e+06)."""
    if value == 0:
        return "0"
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    exp10 = len(digits) - 1 + exponent
    text = "".join(map(str, digits))
    if exp10 < -4 or exp10 >= 6:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return f"{'-' if sign else ''}{mantissa}e{exp10:+03d}"
    return format(Decimal(repr(value)).normalize(), "f")


def truthy(value: Any) -> bool:
    """Go's truth: false, 0, nil and empty strings, maps and lists are false."""
    if value is None or isinstance(value, bool):
        return bool(value)
    if isinstance(value, int | float):
        return value != 0
    return bool(value)


def _compare(op: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    def compare(a: Any, b: Any) -> bool:
        kinds = {type(a) if not isinstance(a, bool) else bool, type(b) if not isinstance(b, bool) else bool}
        if len(kinds) > 1:
            raise TemplateError(f"incompatible types for comparison: {a!r} and {b!r}")
        return op(a, b)

    return compare


def _to_yaml(value: Any) -> str:
    def plain(v: Any) -> Any:  # sigs.k8s.io/yaml goes through JSON: whole floats print as ints
        if isinstance(v, float) and v.is_integer():
            return int(v)
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        if isinstance(v, list):
            return [plain(x) for x in v]
        return v

    return str(yaml.safe_dump(plain(value), sort_keys=True, default_flow_style=False)).rstrip("\n")


def _fail(message: str) -> str:
    raise ChartFail(message)


class Renderer:
    """Render one chart: every file under templates/, defines shared, like helm's engine."""

    def __init__(self, chart_dir: Path, values: dict[str, Any], release: str = "forgebot", namespace: str = "forgebot"):
        meta = yaml.safe_load((chart_dir / "Chart.yaml").read_text(encoding="utf-8"))
        self.base = f"{meta['name']}/templates"
        self.data = {
            "Values": _floats(values),
            "Chart": {"Name": meta["name"], "Version": meta["version"], "AppVersion": meta.get("appVersion", "")},
            "Release": {"Name": release, "Namespace": namespace, "Service": "Helm"},
            "Template": {"BasePath": self.base},
        }
        self.templates: dict[str, list[Node]] = {}
        for path in sorted((chart_dir / "templates").rglob("*")):
            if path.is_file():
                nodes, _, _ = _parse(_lex(path.read_text(encoding="utf-8")), 0, ())
                self.templates[f"{self.base}/{path.relative_to(chart_dir / 'templates')}"] = nodes
                for node in nodes:
                    if node.kind == "define":
                        self.templates[node.text] = node.body
        self.funcs: dict[str, Callable[..., Any]] = {
            "include": lambda name, dot: self.execute(name, dot),
            "default": lambda d, *v: v[0] if v and truthy(v[0]) else d,
            "trunc": lambda n, s: s[:n], "trimSuffix": lambda suf, s: s.removesuffix(suf),
            "contains": lambda sub, s: sub in s, "replace": lambda old, new, s: s.replace(old, new),
            "printf": lambda fmt, *a: re.sub(r"%[sdv]", "{}", fmt).format(*map(go_str, a)),
            "print": lambda *a: "".join(map(go_str, a)), "toString": go_str,
            "quote": lambda *a: " ".join(json.dumps(go_str(x)) for x in a),
            "toYaml": _to_yaml, "nindent": lambda n, s: "\n" + _indent(n, s), "indent": _indent,
            "int": lambda v: int(float(v)) if v not in (None, "") else 0, "add": lambda *a: sum(int(x) for x in a),
            "gt": _compare(lambda a, b: a > b), "ge": _compare(lambda a, b: a >= b),
            "lt": _compare(lambda a, b: a < b), "eq": _compare(lambda a, b: a == b),
            "not": lambda v: not truthy(v), "has": lambda needle, seq: needle in (seq or []),
            "or": lambda *a: next((x for x in a if truthy(x)), a[-1]),
            "and": lambda *a: next((x for x in a if not truthy(x)), a[-1]),
            "ternary": lambda t, f, c: t if truthy(c) else f, "fail": _fail,
            "sha256sum": lambda s: hashlib.sha256(s.encode()).hexdigest(),
        }

    def execute(self, name: str, dot: Any) -> str:
        if name not in self.templates:
            raise TemplateError(f"no template {name!r}")
        return "".join(self._run(self.templates[name], dot, [{"$": dot}]))

    def render_all(self) -> dict[str, str]:
        """Every file that is not a helper, as helm template would print it (notes included)."""
        return {name.removeprefix(self.base + "/"): self.execute(name, self.data)
                for name in self.templates if name.startswith(self.base + "/") and "/_" not in name}

    def _run(self, nodes: list[Node], dot: Any, scopes: list[dict[str, Any]]) -> Iterator[str]:
        for node in nodes:
            if node.kind == "text":
                yield node.text
            elif node.kind == "action":
                value = self._pipe(node.pipe, dot, scopes)
                if not node.pipe["decl"]:
                    yield go_str(value)
            elif node.kind in ("if", "with"):
                value = self._pipe(node.pipe, dot, scopes)
                chosen = node.body if truthy(value) else node.orelse
                inner = value if node.kind == "with" and truthy(value) else dot
                yield from self._run(chosen, inner, [*scopes, {}])
            elif node.kind == "range":
                yield from self._range(node, dot, scopes)

    def _range(self, node: Node, dot: Any, scopes: list[dict[str, Any]]) -> Iterator[str]:
        pipe = dict(node.pipe, decl=[])
        items = self._pipe(pipe, dot, scopes)
        pairs = sorted(items.items()) if isinstance(items, dict) else list(enumerate(items or []))
        if not pairs:
            yield from self._run(node.orelse, dot, [*scopes, {}])
        for key, item in pairs:
            names = node.pipe["decl"]
            scope = {names[0]: key, names[1]: item} if len(names) == 2 else dict.fromkeys(names, item)
            yield from self._run(node.body, item, [*scopes, scope])

    def _pipe(self, pipe: dict[str, Any], dot: Any, scopes: list[dict[str, Any]]) -> Any:
        value: Any = _MISSING
        for command in pipe["commands"]:
            value = self._command(command, dot, scopes, value)
        if pipe["decl"]:
            scopes[-1][pipe["decl"][0]] = value
        return value

    def _command(self, command: list[Any], dot: Any, scopes: list[dict[str, Any]], piped: Any) -> Any:
        head = command[0]
        if head[0] == "tok" and re.fullmatch(r"[A-Za-z_]\w*", head[1]) and head[1] not in ("true", "false", "nil"):
            if head[1] not in self.funcs:
                raise TemplateError(f"function {head[1]!r} not defined")
            args = [self._operand(op, dot, scopes) for op in command[1:]]
            return self.funcs[head[1]](*args, *([] if piped is _MISSING else [piped]))
        if len(command) != 1 or piped is not _MISSING:
            raise TemplateError(f"cannot call a non-function: {command}")
        return self._operand(head, dot, scopes)

    def _operand(self, op: tuple[str, Any], dot: Any, scopes: list[dict[str, Any]]) -> Any:
        if op[0] == "pipe":
            return self._pipe(op[1], dot, scopes)
        tok: str = op[1]
        if tok.startswith('"'):
            return json.loads(tok)
        if re.fullmatch(r"-?\d+", tok):
            return int(tok)
        if re.fullmatch(r"-?\d+\.\d+", tok):
            return float(tok)
        if tok in ("true", "false", "nil"):
            return {"true": True, "false": False, "nil": None}[tok]
        if tok.startswith("$"):
            name, *fields = tok.split(".")
            scope = next((s for s in reversed(scopes) if name in s), None)
            if scope is None:
                raise TemplateError(f"undefined variable {name}")
            return _fields(scope[name], fields, tok)
        if tok.startswith("."):
            return _fields(dot, [f for f in tok.split(".") if f], tok)
        raise TemplateError(f"unexpected token {tok!r}")


_MISSING = object()


def _fields(value: Any, names: list[str], expr: str) -> Any:
    for name in names:
        if not isinstance(value, dict) or name not in value:
            raise TemplateError(f"{expr}: no key {name!r} (missingkey=error, as helm lint --strict)")
        value = value[name]
    return value


def _indent(n: int, text: str) -> str:
    return "\n".join(" " * n + line for line in str(text).split("\n"))


def _floats(value: Any) -> Any:
    """Numbers in values are float64 in helm (values go through JSON)."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, dict):
        return {k: _floats(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_floats(v) for v in value]
    return value
