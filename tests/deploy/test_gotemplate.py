"""The template interpreter behind test_chart_render.py follows Go's rules where charts break."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.deploy.gotemplate import ChartFail, Renderer, TemplateError


def _render(tmp_path: Path, template: str, values: dict[str, Any] | None = None) -> str:
    (tmp_path / "templates").mkdir(exist_ok=True)
    (tmp_path / "Chart.yaml").write_text("name: demo\nversion: 1.0.0\nappVersion: '2'\n", encoding="utf-8")
    (tmp_path / "templates" / "t.yaml").write_text(template, encoding="utf-8")
    return Renderer(tmp_path, values or {}).render_all()["t.yaml"]


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("a  {{- 3 }}  b", "a3  b"),
        ("{{ 3 -}}\n   x", "3x"),
        ("x:\n  {{- if true }}\n  y: 1\n  {{- end }}\n", "x:\n  y: 1\n"),
        ("{{ range $k, $v := .Values.m }}{{ $k }}={{ $v }};{{ end }}", "a=2;b=1;"),
        ("{{ .Values.big }} {{ .Values.small }} {{ .Values.big | int }}", "1e+06 3600 1000000"),
        ("{{ .Values.m | toYaml | nindent 2 }}", "\n  a: 2\n  b: 1"),
        ("{{ default \"d\" .Values.empty }}/{{ .Values.empty | default \"e\" }}", "d/e"),
        ("{{ printf \"%s-%s\" .Release.Name .Chart.Name | trunc 8 }}", "forgebot"),
        ("{{ with .Values.m }}{{ .a }}{{ else }}none{{ end }}{{ with .Values.empty }}x{{ else }}-{{ end }}", "2-"),
        ("{{ $x := 1 }}{{ if true }}{{ $x }}{{ end }}", "1"),
        ("{{ list }}", None),
    ],
)
def test_go_semantics(tmp_path: Path, template: str, expected: str | None) -> None:
    values = {"m": {"b": 1, "a": 2}, "big": 1000000, "small": 3600, "empty": ""}
    if expected is None:
        with pytest.raises(TemplateError, match="not defined"):
            _render(tmp_path, template, values)
    else:
        assert _render(tmp_path, template, values) == expected


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("{{ .Values.nope.deeper }}", "no key 'nope'"),
        ("{{ if true }}{{ $x := 1 }}{{ end }}{{ $x }}", "undefined variable"),
        ("{{ gt .Values.n 1 }}", "incompatible types"),
        ("{{ .Values.m }}", "use toYaml"),
        ("{{ if true }}x", "missing"),
    ],
)
def test_what_go_refuses_is_refused(tmp_path: Path, template: str, message: str) -> None:
    with pytest.raises(TemplateError, match=message):
        _render(tmp_path, template, {"n": 2, "m": {"a": 1}})


def test_fail_is_a_chart_failure(tmp_path: Path) -> None:
    with pytest.raises(ChartFail, match="no redis"):
        _render(tmp_path, '{{ if not .Values.redis }}{{ fail "no redis" }}{{ end }}', {"redis": ""})
