"""The guides only say what the code accepts: commands, chart values, secret file names, metrics, links."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from prometheus_client import CollectorRegistry

from bot.cli import configdoc
from bot.cli.main import COMMANDS, build_parser
from bot.intake.webhooks import Metrics
from foundation.metrics import QueueCollector, QueueSnapshot, TaskMetrics, register_collectors
from tests.deploy import chart
from tests.deploy.chart import ROOT

DOCS = sorted((ROOT / "docs").glob("*.md"))
GUIDES = [ROOT / "README.md", *DOCS]
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
_INLINE = re.compile(r"`([^`\n]+)`")


def _blocks(path: Path, language: str | None = None) -> list[str]:
    text = path.read_text(encoding="utf-8")
    return [body for lang, body in _FENCE.findall(text) if language is None or lang == language]


def _shell_commands(path: Path) -> Iterator[list[str]]:
    """Each simple command of the fenced blocks, continuation lines joined, comments dropped."""
    for block in _blocks(path):
        joined = block.replace("\\\n", " ")
        for line in joined.splitlines():
            for part in re.split(r"&&|\|\||;|\|", line.split(" #")[0]):
                if part.strip() and not part.strip().startswith("#"):
                    try:
                        yield shlex.split(part)
                    except ValueError:
                        continue  # not shell (YAML, a table)


def _forgebot_invocations() -> Iterator[tuple[Path, list[str]]]:
    for path in GUIDES:
        for words in _shell_commands(path):
            if words and Path(words[0]).name == "forgebot":
                yield path, words[1:]
    for path in DOCS:  # inline spans in the guides, skipping usage notation like `[--port P]`
        for span in _INLINE.findall(path.read_text(encoding="utf-8")):
            if span.startswith("forgebot ") and not re.search(r"[\[<]|\.\.\.", span):
                yield path, shlex.split(span)[1:]


def test_every_forgebot_command_in_the_guides_is_accepted_by_the_cli() -> None:
    parser = build_parser()
    seen = 0
    for path, argv in _forgebot_invocations():
        seen += 1
        if len(argv) == 1 and argv[0] in {"serve", "web", "worker", *COMMANDS}:
            continue  # prose naming a command (`forgebot run`), not an invocation of it
        try:
            parser.parse_args(argv)
        except SystemExit:
            pytest.fail(f"{path.name}: `forgebot {' '.join(argv)}` is not accepted by the CLI")
    assert seen >= 3  # the scan itself works: the guides do show commands


def _helm_sets() -> Iterator[tuple[Path, str]]:
    for path in GUIDES:
        for words in _shell_commands(path):
            if words[:1] == ["helm"]:
                for index, word in enumerate(words):
                    if word == "--set":
                        yield path, words[index + 1].split("=", 1)[0]


def test_helm_set_flags_in_the_guides_name_chart_values() -> None:
    defaults = chart.values()
    sets = list(_helm_sets())
    assert sets
    assert [f"{p.name}: {key}" for p, key in sets if not chart.has_path(defaults, key)] == []


def _secret_file_names() -> Iterator[tuple[Path, str]]:
    for path in GUIDES:
        for words in _shell_commands(path):
            for word in words:
                found = re.match(r"--from-(?:literal|file)=([^=]+)=", word)
                if found:
                    yield path, found.group(1)
        for span in _INLINE.findall(path.read_text(encoding="utf-8")):
            if re.fullmatch(r"[a-z]+(?:__[a-z_]+)+", span):
                yield path, span
    for key in chart.values()["secrets"]:
        yield chart.CHART / "values.yaml", key


def test_secret_file_names_are_settings() -> None:
    names = list(_secret_file_names())
    assert any(name == "gitlab__token" for _, name in names)
    bad = []
    for path, name in names:
        try:
            configdoc.resolve_env_name("FORGEBOT_" + name.upper())
        except KeyError:
            bad.append(f"{path.name}: {name}")
    assert bad == []


def _known_metrics() -> set[str]:
    registry = CollectorRegistry()
    TaskMetrics.create(registry)
    Metrics.create(registry)
    registry.register(QueueCollector(lambda: QueueSnapshot(0, 0, 0, 0, 0.0)))
    # serve's view of its worker child (nothing listens on port 9: only the `up` gauge, at 0)
    serve = CollectorRegistry()
    register_collectors(serve, None, tasks_from="http://127.0.0.1:9/metrics")
    suffixes = {"counter": ["_total"], "histogram": ["", "_bucket", "_sum", "_count"], "gauge": [""]}
    families = [*registry.collect(), *serve.collect()]
    return {family.name + s for family in families for s in suffixes[family.type]}


def test_metric_names_in_the_guides_exist() -> None:
    known = _known_metrics()
    named = {(p.name, m) for p in GUIDES for m in re.findall(r"\bforgebot_[a-z_]+", p.read_text(encoding="utf-8"))}
    assert sorted(f"{p}: {m}" for p, m in named if m not in known) == []


def test_alert_rules_parse_and_use_known_metrics() -> None:
    (block,) = _blocks(ROOT / "docs" / "alerts.md", "yaml")
    rules = yaml.safe_load(block)["groups"][0]["rules"]
    assert len(rules) >= 8
    known = _known_metrics()
    for rule in rules:
        assert {"alert", "expr", "labels", "annotations"} <= set(rule), rule.get("alert")
        used = re.findall(r"\bforgebot_[a-z_]+", rule["expr"])
        assert all(m in known for m in used), (rule["alert"], used)


def test_relative_links_between_guides_resolve() -> None:
    broken = []
    for path in GUIDES:
        for target in re.findall(r"\]\(([^)#:]+\.md)(?:#[^)]*)?\)", path.read_text(encoding="utf-8")):
            if not (path.parent / target).exists():
                broken.append(f"{path.name} -> {target}")
    assert broken == []
