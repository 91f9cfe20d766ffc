"""The configuration reference is generated from Settings, and every documented name exists."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field, SecretStr
from pydantic_settings import BaseSettings

from bot.cli import configdoc
from foundation.settings import GitLabSettings, RoleModel, Settings
from tests.deploy import chart
from tests.deploy.chart import ROOT

# FORGEBOT_ names that are not settings, with the file that reads each one.
NOT_SETTINGS = {
    "FORGEBOT_SECRETS_DIR": ROOT / "foundation" / "settings.py",
    "FORGEBOT_REQUIRE_TOOLS": ROOT / ".ci" / "run",
    "FORGEBOT_TEST_WORKERS": ROOT / "scripts" / "test",
    "FORGEBOT_NO_TREEWALK": ROOT / "project" / "index" / "treewalk.py",  # and hatch_build.py, at install
}
_NAME = re.compile(r"FORGEBOT_[A-Z0-9][A-Z0-9_]*(?:<[A-Z]+>[A-Z0-9_]*)*\*?")


def test_committed_reference_equals_the_generated_one() -> None:
    committed = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert committed == configdoc.render(), "docs/configuration.md is stale: run scripts/gen-config-docs"


def test_check_mode_reports_a_stale_page(tmp_path: Path) -> None:
    page = tmp_path / "configuration.md"
    assert configdoc.main(["--output", str(page)]) == 0
    assert configdoc.main(["--output", str(page), "--check"]) == 0
    page.write_text(page.read_text(encoding="utf-8").replace("FORGEBOT_JOB_TIMEOUT", "FORGEBOT_OLD"), encoding="utf-8")
    assert configdoc.main(["--output", str(page), "--check"]) == 1


class _Role(BaseModel):
    """One role."""

    model: str | None = None


class _Forge(BaseModel):
    """A forge."""

    token: SecretStr | None = None
    kind: Literal["a", "b"] = "a"
    hosts: list[str] = Field(default_factory=list, description="allowed | hosts")


class _Toy(BaseSettings):
    port: int = Field(default=8080, description="listen port")
    forge: _Forge = Field(default_factory=_Forge)
    roles: dict[str, _Role] = Field(default_factory=dict)


def test_render_flattens_nested_models_dicts_secrets_and_literals() -> None:
    page = configdoc.render(_Toy)
    assert "| `FORGEBOT_PORT` | integer | `8080` | listen port |" in page
    assert "| `FORGEBOT_FORGE__TOKEN` | string | unset | *secret.* |" in page
    assert "| `FORGEBOT_FORGE__KIND` | `a` \\| `b` | `a` |  |" in page
    assert "| `FORGEBOT_FORGE__HOSTS` | JSON list | empty | allowed \\| hosts |" in page
    assert "| `FORGEBOT_ROLES__<ROLE>__MODEL` | string | unset |  |" in page
    assert "## `forge`: A forge." in page


@pytest.mark.parametrize(
    ("name", "model", "field"),
    [("FORGEBOT_DATA_DIR", Settings, "data_dir"), ("FORGEBOT_GITLAB__TOKEN", GitLabSettings, "token"),
     ("FORGEBOT_LLM__ROLES__<ROLE>__MODEL", RoleModel, "model"),
     ("FORGEBOT_LLM__ROLES__REVIEWER__API_KEY", RoleModel, "api_key")],
)
def test_resolve_known_names(name: str, model: type[BaseModel], field: str) -> None:
    assert configdoc.resolve_env_name(name) is model.model_fields[field]


@pytest.mark.parametrize(
    "name", ["FORGEBOT_GITLAB", "FORGEBOT_GITLAB__TOKEN__X", "FORGEBOT_GITLAB__TOKN", "FORGEBOT_LLM__ROLES__MODEL",
             "GITLAB__TOKEN"],
)
def test_resolve_refuses_unknown_or_partial_names(name: str) -> None:
    with pytest.raises(KeyError):
        configdoc.resolve_env_name(name)


def _documents() -> list[Path]:
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return [*docs, chart.CHART / "values.yaml", *chart.TEMPLATES.rglob("*.yaml"), *(chart.CHART / "ci").glob("*.yaml")]


def _documented(name: str) -> bool:
    if name.endswith("*"):  # `FORGEBOT_INTAKE__*`: a section, which must hold at least one setting
        return any(row.env.startswith(name[:-1]) for _, row in configdoc.rows())
    try:
        configdoc.resolve_env_name(name.rstrip("_"))
    except KeyError:
        return False
    return True


def test_every_documented_forgebot_name_is_a_setting() -> None:
    unknown = [
        f"{path.relative_to(ROOT)}: {name}"
        for path in _documents()
        for name in set(_NAME.findall(path.read_text(encoding="utf-8")))
        if name not in NOT_SETTINGS and not _documented(name)
    ]
    assert unknown == []


def test_wildcards_must_name_a_section() -> None:
    assert _documented("FORGEBOT_GITLAB__*")
    assert not _documented("FORGEBOT_GITLABS__*")
    assert not _documented("FORGEBOT_GITLAB__TOKN")


def test_names_that_are_not_settings_are_really_read_by_the_code() -> None:
    for name, reader in NOT_SETTINGS.items():
        assert name in reader.read_text(encoding="utf-8"), f"{name} documented but not read by {reader.name}"


def _setting(settings: Settings, key: str) -> Any:
    """The value at a `config:` key's path (`LLM__ROLES__REVIEWER__MODEL`: a dict entry on the way)."""
    node: Any = settings
    for part in key.lower().split("__"):
        node = node[part] if isinstance(node, dict) else getattr(node, part)
    return node


def test_chart_config_keys_reach_their_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """`config:` keys become FORGEBOT_<KEY> in the ConfigMap; a typo would be silently ignored, so each
    key of every values file is a setting, and the value set there is the value the service reads."""
    rows = [(variant.name, str(key), value)
            for variant in [chart.CHART / "values.yaml", *sorted((chart.CHART / "ci").glob("values-*.yaml"))]
            for key, value in ((chart.load_yaml(variant) or {}).get("config") or {}).items()]
    assert rows, "no values file sets `config:`: nothing here is checked"
    for variant, key, value in rows:
        configdoc.resolve_env_name("FORGEBOT_" + key)
        monkeypatch.setenv("FORGEBOT_" + key, str(value))
        assert _setting(Settings(_env_file=None), key) == value, (variant, key)  # type: ignore[call-arg]
