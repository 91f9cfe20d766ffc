"""The chart rendered by real Helm (tests/deploy/helmchart.py) for each CI variant: manifests that fit together."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.cli import configdoc
from bot.cli.main import build_parser
from foundation.settings import Settings
from tests.deploy import chart, helmchart

VARIANTS = helmchart.ci_values()


def _render(override: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """`kind/name` → object, rendered by Helm with `override` over values.yaml, each object valid."""
    objects = helmchart.render(override)
    for obj in objects.values():
        helmchart.validate(obj)
    return objects


def _variant(path: Path) -> dict[str, Any]:
    return helmchart.load_values(path)


def _pods(objects: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    pods = {k: o["spec"]["template"]["spec"] for k, o in objects.items() if o["kind"] == "Deployment"}
    pods.update({k: o["spec"] for k, o in objects.items() if o["kind"] == "Pod"})
    return pods


def test_there_are_ci_variants() -> None:
    assert len(VARIANTS) >= 3, VARIANTS


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda p: p.name)
def test_helm_lint_strict_is_clean_for_every_ci_variant(variant: Path) -> None:
    assert helmchart.lint(_variant(variant)) == []


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda p: p.name)
def test_every_manifest_of_every_ci_variant_fits_the_kubernetes_schema(variant: Path) -> None:
    objects = helmchart.render(_variant(variant))
    kinds = {o["kind"] for o in objects.values()}
    assert {"Deployment", "Service", "ConfigMap", "ServiceAccount", "Pod"} <= kinds
    for key, obj in objects.items():
        try:
            helmchart.validate(obj)
        except helmchart.ValidationError as exc:
            pytest.fail(f"{key}: {exc.message}")


def test_default_values_refuse_to_render_without_a_redis() -> None:
    with pytest.raises(helmchart.HelmRenderError, match="forgebot needs Redis"):
        helmchart.render(None)


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda p: p.name)
def test_pods_are_locked_down_and_mounts_match_volumes(variant: Path) -> None:
    for key, pod in _pods(_render(_variant(variant))).items():
        assert pod["automountServiceAccountToken"] is False, key
        assert pod["securityContext"]["runAsNonRoot"] is True, key
        volumes = {v["name"] for v in pod.get("volumes", [])}
        for container in pod["containers"]:
            context = container["securityContext"]
            assert context["readOnlyRootFilesystem"] is True and context["allowPrivilegeEscalation"] is False, key
            assert context["capabilities"]["drop"] == ["ALL"], key
            assert {m["name"] for m in container.get("volumeMounts", [])} <= volumes, key


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda p: p.name)
def test_web_and_worker_run_cli_commands_with_settings_the_model_knows(variant: Path) -> None:
    objects = _render(_variant(variant))
    parser = build_parser()
    for component in ("web", "worker"):
        container = objects[f"Deployment/forgebot-{component}"]["spec"]["template"]["spec"]["containers"][0]
        parser.parse_args(container["args"])
        env = {e["name"]: e.get("value") for e in container["env"]}
        assert env["FORGEBOT_SECRETS_DIR"] == "/etc/forgebot/secrets"
    for name in objects["ConfigMap/forgebot"]["data"]:
        configdoc.resolve_env_name(name)
    secret = objects.get("Secret/forgebot")
    for name in (secret or {}).get("stringData") or {}:
        configdoc.resolve_env_name("FORGEBOT_" + name.upper())


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda p: p.name)
def test_service_ingress_and_scaler_point_at_what_exists(variant: Path) -> None:
    objects = _render(_variant(variant))
    web = objects["Deployment/forgebot-web"]["spec"]["template"]["metadata"]["labels"]
    service = objects["Service/forgebot"]
    assert service["spec"]["selector"].items() <= web.items()
    for ingress in (o for o in objects.values() if o["kind"] == "Ingress"):
        for path in ingress["spec"]["rules"][0]["http"]["paths"]:
            assert path["backend"]["service"]["name"] == "forgebot"
    for scaler in (o for o in objects.values() if o["kind"] == "ScaledObject"):
        assert f"Deployment/{scaler['spec']['scaleTargetRef']['name']}" in objects
        assert scaler["spec"]["triggers"][0]["metadata"]["listName"] == "arq:queue"
        assert "replicas" not in objects["Deployment/forgebot-worker"]["spec"]  # KEDA owns the count


def test_sandbox_values_reach_the_worker_as_settings() -> None:
    objects = _render({"redis": {"enabled": True}, "sandbox": {"allowUnisolated": True, "installNetwork": False},
                       "worker": {"seccompProfile": {"type": "Localhost", "localhostProfile": "forgebot.json"}}})
    data = objects["ConfigMap/forgebot"]["data"]
    env = {k.removeprefix("FORGEBOT_"): v for k, v in data.items() if k.startswith("FORGEBOT_SANDBOX__")}
    settings = Settings(_env_file=None, _secrets_dir=None,  # type: ignore[call-arg]
                        sandbox={k.removeprefix("SANDBOX__").lower(): v for k, v in env.items()})
    assert settings.sandbox.allow_unisolated is True and settings.sandbox.install_network is False
    assert settings.sandbox.max_processes == 256 and settings.sandbox.tmp_mb == 512
    worker = objects["Deployment/forgebot-worker"]["spec"]["template"]["spec"]["containers"][0]
    web = objects["Deployment/forgebot-web"]["spec"]["template"]["spec"]["containers"][0]
    assert worker["securityContext"]["seccompProfile"] == {"type": "Localhost", "localhostProfile": "forgebot.json"}
    assert "seccompProfile" not in web["securityContext"]  # the receiver keeps the pod's RuntimeDefault


def test_sandbox_defaults_fail_closed() -> None:
    data = _render({"redis": {"enabled": True}})["ConfigMap/forgebot"]["data"]
    assert data["FORGEBOT_SANDBOX__ALLOW_UNISOLATED"] == "false"


def test_worker_grace_is_job_timeout_plus_margin_even_for_large_timeouts() -> None:
    objects = _render({"redis": {"enabled": True}, "jobTimeout": 1_000_000})
    worker = objects["Deployment/forgebot-worker"]["spec"]["template"]["spec"]
    assert worker["terminationGracePeriodSeconds"] == 1_000_030  # an int, not 1e+06 (Go prints floats so)
    assert objects["ConfigMap/forgebot"]["data"]["FORGEBOT_JOB_TIMEOUT"] == "1000000"


def test_production_variant_uses_the_existing_secret_and_a_kept_volume() -> None:
    objects = _render(_variant(chart.CHART / "ci" / "values-production.yaml"))
    assert "Secret/forgebot" not in objects
    claim = objects["PersistentVolumeClaim/forgebot-data"]
    assert claim["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    worker = objects["Deployment/forgebot-worker"]["spec"]
    assert worker["strategy"]["type"] == "Recreate"
    volumes = {v["name"]: v for v in worker["template"]["spec"]["volumes"]}
    assert volumes["data"]["persistentVolumeClaim"]["claimName"] == "forgebot-data"
    assert volumes["secrets"]["secret"]["secretName"] == "forgebot-credentials"
    assert objects["Ingress/forgebot"]["spec"]["rules"][0]["http"]["paths"][0]["path"] == "/webhooks"


def test_in_chart_redis_is_reached_by_its_full_name_from_keda() -> None:
    objects = _render({"redis": {"enabled": True}, "autoscaling": {"enabled": True}})
    trigger = objects["ScaledObject/forgebot-worker"]["spec"]["triggers"][0]["metadata"]
    assert trigger["address"] == "forgebot-redis.forgebot.svc:6379"
    assert objects["ConfigMap/forgebot"]["data"]["FORGEBOT_REDIS_URL"] == "redis://forgebot-redis:6379/0"


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({}, "forgebot needs Redis"),
        ({"redis": {"enabled": True}, "externalRedis": {"url": "redis://r:6379"}}, "not both"),
        ({"redis": {"enabled": True}, "persistence": {"enabled": True}, "worker": {"replicaCount": 2}},
         "ReadWriteOnce"),
        ({"redis": {"enabled": True}, "web": {"replicaCount": 1}}, "minAvailable"),
        ({"externalRedis": {"url": "redis://r:6379"}, "autoscaling": {"enabled": True}}, "redisAddress"),
    ],
)
def test_configurations_that_cannot_work_are_refused_at_render_time(override: dict[str, Any], message: str) -> None:
    with pytest.raises(helmchart.HelmRenderError, match=message):
        _render(override)


def test_extra_env_and_volumes_reach_both_pods() -> None:
    objects = _render({
        "redis": {"enabled": True},
        "extraEnv": [{"name": "REQUESTS_CA_BUNDLE", "value": "/etc/ca/ca.pem"}],
        "extraVolumes": [{"name": "ca", "configMap": {"name": "corp-ca"}}],
        "extraVolumeMounts": [{"name": "ca", "mountPath": "/etc/ca", "readOnly": True}],
    })
    for component in ("web", "worker"):
        pod = objects[f"Deployment/forgebot-{component}"]["spec"]["template"]["spec"]
        container = pod["containers"][0]
        assert {"name": "REQUESTS_CA_BUNDLE", "value": "/etc/ca/ca.pem"} in container["env"]
        assert {"name": "ca", "configMap": {"name": "corp-ca"}} in pod["volumes"]
        assert {"name": "ca", "mountPath": "/etc/ca", "readOnly": True} in container["volumeMounts"]


# The checks above can fail: each of these breaks a copy of the chart and expects the check to say so.


@pytest.fixture
def chart_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "forgebot"
    shutil.copytree(chart.CHART, copy)
    return copy


def _eval_values(chart_dir: Path) -> dict[str, Any]:
    return helmchart.load_values(chart_dir / "ci" / "values-eval.yaml")


def test_broken_template_syntax_fails_lint_and_render(chart_copy: Path) -> None:
    values = _eval_values(chart_copy)
    assert helmchart.lint(values, chart_copy) == []
    template = chart_copy / "templates" / "configmap.yaml"
    template.write_text(template.read_text(encoding="utf-8") + "\n{{ if .Values.jobTimeout }}\n", encoding="utf-8")
    assert any("configmap.yaml" in problem for problem in helmchart.lint(values, chart_copy))
    with pytest.raises(helmchart.HelmError, match="configmap.yaml"):
        helmchart.render(values, chart_copy)


def test_misspelled_key_in_a_ci_values_file_is_refused(chart_copy: Path) -> None:
    path = chart_copy / "ci" / "values-production.yaml"
    values = helmchart.load_values(path)
    assert values["persistence"]["enabled"] is True
    values["persistence"]["enabeld"] = values["persistence"].pop("enabled")  # a nested typo
    path.write_text(yaml.safe_dump(values), encoding="utf-8")
    problems = helmchart.lint(helmchart.load_values(path), chart_copy)
    assert any("enabeld" in problem for problem in problems), problems
    with pytest.raises(helmchart.HelmValuesError, match="enabeld"):
        helmchart.render(helmchart.load_values(path), chart_copy)


def test_manifest_against_the_kubernetes_schema_fails_validation(chart_copy: Path) -> None:
    template = chart_copy / "templates" / "deployment-web.yaml"
    text = template.read_text(encoding="utf-8")
    assert "  replicas: {{ .Values.web.replicaCount }}\n" in text
    template.write_text(text.replace("{{ .Values.web.replicaCount }}", '"two"', 1), encoding="utf-8")
    objects = helmchart.render(_eval_values(chart_copy), chart_copy)
    web = objects["Deployment/forgebot-web"]
    assert web["spec"]["replicas"] == "two"  # Helm renders it; only the Kubernetes schema objects
    with pytest.raises(helmchart.ValidationError, match="two"):
        helmchart.validate(web)


def test_unknown_field_in_a_manifest_fails_strict_validation() -> None:
    objects = _render(_variant(chart.CHART / "ci" / "values-eval.yaml"))
    service = objects["Service/forgebot"]
    service["spec"]["selectr"] = {"app": "x"}
    with pytest.raises(helmchart.ValidationError):
        helmchart.validate(service)
