"""The chart rendered (tests/deploy/gotemplate.py) for each CI variant: manifests that fit together."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot import configdoc
from bot.cli import build_parser
from bot.settings import Settings
from tests.deploy import chart
from tests.deploy.gotemplate import ChartFail, Renderer

VARIANTS = sorted((chart.CHART / "ci").glob("values-*.yaml"))


def _merged(override: dict[str, Any]) -> dict[str, Any]:
    def merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
        out = copy.deepcopy(base)
        for key, value in extra.items():
            out[key] = merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
        return out

    return merge(chart.values(), override)


def _render(override: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """`kind/name` → object, for every manifest the chart renders."""
    objects: dict[str, dict[str, Any]] = {}
    for name, text in Renderer(chart.CHART, _merged(override)).render_all().items():
        if name == "NOTES.txt":
            continue
        for doc in yaml.safe_load_all(text):
            if doc:
                key = f"{doc['kind']}/{doc['metadata']['name']}"
                assert key not in objects, f"{key} rendered twice"
                objects[key] = doc
    return objects


def _variant(path: Path) -> dict[str, Any]:
    loaded = chart.load_yaml(path)
    assert isinstance(loaded, dict)
    return loaded


def _pods(objects: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    pods = {k: o["spec"]["template"]["spec"] for k, o in objects.items() if o["kind"] == "Deployment"}
    pods.update({k: o["spec"] for k, o in objects.items() if o["kind"] == "Pod"})
    return pods


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
    parser = build_parser(Settings(_env_file=None, _secrets_dir=None))  # type: ignore[call-arg]
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
    with pytest.raises(ChartFail, match=message):
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
