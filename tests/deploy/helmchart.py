"""The chart through real Helm (helm-python-sdk: Helm's Go SDK, offline) and kubernetes-validate.

`lint` is `helm lint --strict`, `render` is `helm template` (values coalesced over values.yaml and
checked against values.schema.json, as an install does), `validate` checks one rendered object
against the pinned Kubernetes version's schemas, strictly (unknown fields are errors).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import helm_python
import kubernetes_validate
import yaml

from tests.deploy import chart

# Same as KUBERNETES_VERSION in .gitlab-ci.yml; kubernetes-validate ships this version's schemas.
KUBERNETES_VERSION = "1.30.0"
RELEASE = "forgebot"
NAMESPACE = "forgebot"
# Custom resources whose schema is not Kubernetes' own (KEDA); .gitlab-ci.yml's kubeconform job
# checks them against the CRDs catalog. Every other kind must have a schema here.
CUSTOM_KINDS = frozenset({"ScaledObject"})

HelmError = helm_python.HelmError
HelmRenderError = helm_python.HelmRenderError
HelmValuesError = helm_python.HelmValuesError
ValidationError = kubernetes_validate.ValidationError


def ci_values(chart_dir: Path = chart.CHART) -> list[Path]:
    return sorted((chart_dir / "ci").glob("*.yaml"))


def lint(values: dict[str, Any] | None, chart_dir: Path = chart.CHART) -> list[str]:
    """`helm lint --strict`: every error and warning (strict makes warnings fatal); [] when clean."""
    report = helm_python.lint(
        chart_dir, values, strict=True, namespace=NAMESPACE, kube_version=f"v{KUBERNETES_VERSION}"
    )
    problems = [str(e) for e in report.get("errors") or []]
    problems += [f"{m['path']}: {m['error']}" for m in report.get("messages") or [] if m["severity"] >= 2]
    return problems


def render(values: dict[str, Any] | None, chart_dir: Path = chart.CHART) -> dict[str, dict[str, Any]]:
    """`kind/name` → object for every manifest the chart renders (NOTES.txt left out)."""
    with helm_python.Chart.load(chart_dir) as loaded:
        manifests = loaded.render(values or {}, name=RELEASE, namespace=NAMESPACE, is_install=True)
    objects: dict[str, dict[str, Any]] = {}
    for name, text in sorted(manifests.items()):
        if name.endswith("NOTES.txt"):
            continue
        for doc in yaml.safe_load_all(text):
            if doc:
                assert isinstance(doc, dict), name
                key = f"{doc['kind']}/{doc['metadata']['name']}"
                assert key not in objects, f"{key} rendered twice"
                objects[key] = doc
    return objects


def validate(obj: dict[str, Any]) -> None:
    """Raise ValidationError when `obj` breaks the Kubernetes schema (unknown fields included)."""
    try:
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.SchemaNotFoundError:
        if obj["kind"] not in CUSTOM_KINDS:
            raise


def load_values(path: Path) -> dict[str, Any]:
    loaded = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    assert isinstance(loaded, dict), path
    return loaded
