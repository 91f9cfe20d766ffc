"""The Helm chart: values against the schema, documented values, template skeletons, secure defaults."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.deploy import chart


def _validator() -> jsonschema.Draft7Validator:
    schema = chart.schema()
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def test_default_values_validate_against_the_schema() -> None:
    errors = [e.message for e in _validator().iter_errors(chart.values())]
    assert errors == []


@pytest.mark.parametrize("variant", sorted((chart.CHART / "ci").glob("values-*.yaml")), ids=lambda p: p.name)
def test_ci_variants_validate_merged_over_the_defaults(variant: Path) -> None:
    merged = _merge(chart.values(), chart.load_yaml(variant))
    errors = [e.message for e in _validator().iter_errors(merged)]
    assert errors == []


def _merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Helm's merge: maps merge key by key, anything else is replaced."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


@pytest.mark.parametrize(
    ("override", "complaint"),
    [
        ({"containerSecurityContext": {"runAsNonRoot": False}}, "runAsNonRoot"),
        ({"containerSecurityContext": {"allowPrivilegeEscalation": True}}, "allowPrivilegeEscalation"),
        ({"containerSecurityContext": {"capabilities": {"drop": ["NET_RAW"]}}}, "capabilities"),
        ({"podSecurityContext": {"runAsNonRoot": False}}, "runAsNonRoot"),
        ({"secrets": {"FORGEBOT_GITLAB__TOKEN": "x"}}, "secrets"),
        ({"config": {"SECRETS_DIR": "/elsewhere"}}, "config"),
        ({"jobTimeout": 5}, "jobTimeout"),
        ({"llm": {"provider": "azure"}}, "provider"),
        ({"externalRedis": {"url": "localhost:6379"}}, "url"),
        ({"autoscaling": {"redisAddress": "redis://redis:6379"}}, "redisAddress"),
        ({"webb": {"replicaCount": 2}}, "webb"),
        ({"sandbox": {"allowUnisolated": "yes"}}, "allowUnisolated"),
        ({"sandbox": {"allow_unisolated": True}}, "allow_unisolated"),
        ({"worker": {"seccompProfile": {"type": "Unconfinded"}}}, "Unconfinded"),
    ],
)
def test_schema_refuses_unsafe_or_mistyped_values(override: dict[str, Any], complaint: str) -> None:
    errors = list(_validator().iter_errors(_merge(chart.values(), override)))
    assert errors, f"schema accepted {override}"
    assert any(complaint in (e.json_path + e.message) for e in errors), [e.message for e in errors]


def test_every_values_reference_in_the_templates_exists_in_values_yaml() -> None:
    defaults = chart.values()
    missing = [f"{p.name}: .Values.{ref}" for p, ref in chart.values_references() if not chart.has_path(defaults, ref)]
    assert missing == []


def test_every_value_is_documented_and_every_param_exists() -> None:
    documented = set(chart.documented_params())
    defaults = chart.values()
    assert [p for p in documented if not chart.has_path(defaults, p)] == []
    undocumented = [
        leaf for leaf in _leaves(defaults) if not any(leaf == d or leaf.startswith(d + ".") for d in documented)
    ]
    assert undocumented == []


def _leaves(tree: dict[str, Any], prefix: str = "") -> list[str]:
    out: list[str] = []
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.extend(_leaves(value, path + "."))
        else:
            out.append(path)
    return out


def test_every_value_is_in_the_schema() -> None:
    """`additionalProperties: false` at the top level only bites if each key is declared."""
    properties = chart.schema()["properties"]
    assert sorted(set(chart.values()) - set(properties)) == []


@pytest.mark.parametrize("template", chart.manifest_templates(), ids=lambda p: str(p.relative_to(chart.TEMPLATES)))
def test_template_skeleton_is_yaml_with_a_kind(template: Path) -> None:
    docs = chart.skeletons(template)
    assert len(docs) == 1
    assert {"apiVersion", "kind", "metadata"} <= set(docs[0])


def _pod_spec(name: str) -> dict[str, Any]:
    spec = chart.skeletons(chart.TEMPLATES / name)[0]["spec"]
    pod = spec["template"]["spec"] if "template" in spec else spec
    assert isinstance(pod, dict)
    return pod


@pytest.mark.parametrize("name", ["deployment-web.yaml", "deployment-worker.yaml", "redis/deployment.yaml",
                                  "tests/healthz.yaml"])
def test_every_pod_has_no_service_account_token_and_a_security_context(name: str) -> None:
    pod = _pod_spec(name)
    assert pod["automountServiceAccountToken"] is False
    assert "securityContext" in pod
    assert all("securityContext" in c for c in pod["containers"])


def test_secure_defaults_in_values() -> None:
    defaults = chart.values()
    container = defaults["containerSecurityContext"]
    assert container["readOnlyRootFilesystem"] is True
    assert container["allowPrivilegeEscalation"] is False
    assert container["capabilities"]["drop"] == ["ALL"]
    assert defaults["podSecurityContext"]["runAsNonRoot"] is True
    assert defaults["podSecurityContext"]["runAsUser"] != 0
    assert defaults["serviceAccount"]["create"] is True
    assert defaults["ingress"]["paths"] == ["/webhooks"]  # /metrics stays inside the cluster
    assert defaults["redis"]["enabled"] is False  # the in-chart Redis is opt-in, for evaluation


def test_read_only_root_has_writable_volumes_for_data_tmp_and_secrets() -> None:
    helpers = (chart.TEMPLATES / "_helpers.tpl").read_text(encoding="utf-8")
    for mount in ("mountPath: /var/lib/forgebot", "mountPath: /tmp", "mountPath: /etc/forgebot/secrets"):
        assert mount in helpers
    for name in ("deployment-web.yaml", "deployment-worker.yaml"):
        volumes = {v["name"] for v in _pod_spec(name)["volumes"]}
        assert "data" in volumes, name
        text = (chart.TEMPLATES / name).read_text(encoding="utf-8")
        assert 'include "forgebot.volumeMounts"' in text and 'include "forgebot.commonVolumes"' in text


def test_worker_grace_follows_the_job_timeout() -> None:
    worker = (chart.TEMPLATES / "deployment-worker.yaml").read_text(encoding="utf-8")
    assert 'terminationGracePeriodSeconds: {{ include "forgebot.workerGrace" . }}' in worker
    helpers = (chart.TEMPLATES / "_helpers.tpl").read_text(encoding="utf-8")
    assert "add (int .Values.jobTimeout) 30" in helpers
    configmap = (chart.TEMPLATES / "configmap.yaml").read_text(encoding="utf-8")
    assert "FORGEBOT_JOB_TIMEOUT: {{ .Values.jobTimeout" in configmap


def test_web_and_worker_run_the_same_image_with_commands_the_cli_accepts() -> None:
    from bot.cli.main import build_parser

    parser = build_parser()
    for name in ("deployment-web.yaml", "deployment-worker.yaml"):
        container = _pod_spec(name)["containers"][0]
        text = (chart.TEMPLATES / name).read_text(encoding="utf-8")
        assert 'image: {{ include "forgebot.image" . | quote }}' in text
        parser.parse_args(container["args"])  # exits (SystemExit) on an argument the CLI does not know


def test_secrets_reach_the_process_as_files_not_environment() -> None:
    helpers = (chart.TEMPLATES / "_helpers.tpl").read_text(encoding="utf-8")
    assert "FORGEBOT_SECRETS_DIR" in helpers and "/etc/forgebot/secrets" in helpers
    for name in ("deployment-web.yaml", "deployment-worker.yaml"):
        assert "secretKeyRef" not in (chart.TEMPLATES / name).read_text(encoding="utf-8")
        assert "secretRef" not in (chart.TEMPLATES / name).read_text(encoding="utf-8")
