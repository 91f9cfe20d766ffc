"""The project's .gitlab-ci.yml runs what .ci/run runs, plus the chart checks and the image build."""

from __future__ import annotations

import re
from typing import Any

from tests.deploy.chart import ROOT, load_yaml


def _pipeline() -> dict[str, Any]:
    loaded = load_yaml(ROOT / ".gitlab-ci.yml")
    assert isinstance(loaded, dict)
    return loaded


def _script(job: dict[str, Any]) -> str:
    return "\n".join([*job.get("before_script", []), *job.get("script", [])])


def _jobs() -> dict[str, dict[str, Any]]:
    return {k: v for k, v in _pipeline().items() if isinstance(v, dict) and "script" in v and not k.startswith(".")}


def test_every_job_uses_a_declared_stage() -> None:
    stages = _pipeline()["stages"]
    assert {job.get("stage") for job in _jobs().values()} <= set(stages)


def test_python_jobs_call_the_same_scripts_as_ci_run() -> None:
    ci_run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    called = set(re.findall(r"^(scripts/\w+)\s*$", ci_run, re.M))
    assert called == {"scripts/test", "scripts/check"}
    in_pipeline = "\n".join(_script(job) for job in _jobs().values())
    for script in called:
        assert re.search(rf"^{script}\s*$", in_pipeline, re.M), f"{script} is in .ci/run but not in the pipeline"


def test_test_job_installs_every_debian_package_ci_run_installs() -> None:
    ci_run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    block = re.search(r"apt_packages=\(([^)]*)\)", ci_run)
    assert block
    wanted = set(block.group(1).split()) - {"git"}  # the python:3.11-bookworm image has git
    installed = set(_script(_jobs()["test"]).split())
    assert wanted <= installed, sorted(wanted - installed)


def test_secret_scan_chart_checks_and_image_build_are_present() -> None:
    jobs = _jobs()
    scripts = {name: _script(job) for name, job in jobs.items()}
    assert "gitleaks detect" in scripts["gitleaks"]
    assert "helm lint --strict" in scripts["chart:lint"]
    assert "helm template" in scripts["chart:lint"] and "charts/forgebot/ci/values-" in scripts["chart:lint"]
    assert "kubeconform -strict" in scripts["chart:validate"]
    assert jobs["chart:validate"]["needs"] == ["chart:lint"]
    assert "buildah build" in scripts["image"]
    assert "FORGEBOT_REQUIRE_TOOLS" in _pipeline()["variables"]
