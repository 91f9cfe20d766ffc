"""Static views of the Helm chart for tests: values, the schema, templates with directives stripped.

Rendering, `helm lint --strict` and Kubernetes schema checks go through real Helm in
tests/deploy/helmchart.py; these are the checks on the chart's files themselves.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "forgebot"
TEMPLATES = CHART / "templates"

_WHOLE_LINE_DIRECTIVE = re.compile(r"^\s*\{\{-?.*?-?\}\}\s*$")
_INLINE_DIRECTIVE = re.compile(r"\{\{-?.*?-?\}\}")
_VALUES_REF = re.compile(r"\.Values((?:\.[A-Za-z_][A-Za-z0-9_]*)+)")
_PARAM = re.compile(r"^## @param ([A-Za-z0-9_.]+) \S")


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def values() -> dict[str, Any]:
    loaded = load_yaml(CHART / "values.yaml")
    assert isinstance(loaded, dict)
    return loaded


def schema() -> dict[str, Any]:
    loaded = json.loads((CHART / "values.schema.json").read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def manifest_templates() -> list[Path]:
    """Template files that render Kubernetes objects (not helpers, not NOTES)."""
    return sorted(p for p in TEMPLATES.rglob("*.yaml"))


def strip_directives(text: str) -> str:
    """Drop whole-line directives, put a plain scalar where an inline one stood.

    Whole-line directives are control flow or `include ... | nindent` blocks; removing them leaves
    the static skeleton, which must still be YAML with the right nesting.
    """
    kept = [line for line in text.splitlines() if not _WHOLE_LINE_DIRECTIVE.match(line)]
    return "\n".join(_INLINE_DIRECTIVE.sub("x", line) for line in kept) + "\n"


def skeletons(path: Path) -> list[dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all(strip_directives(path.read_text(encoding="utf-8"))) if d]
    assert all(isinstance(d, dict) for d in docs), path
    return docs


def values_references() -> Iterator[tuple[Path, str]]:
    """Every `.Values.a.b` path used by a template or helper."""
    for path in sorted(TEMPLATES.rglob("*")):
        if path.is_file():
            for match in _VALUES_REF.finditer(path.read_text(encoding="utf-8")):
                yield path, match.group(1).lstrip(".")


def has_path(tree: dict[str, Any], dotted: str) -> bool:
    node: Any = tree
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def documented_params() -> list[str]:
    lines = (CHART / "values.yaml").read_text(encoding="utf-8").splitlines()
    return [m.group(1) for m in map(_PARAM.match, lines) if m]
