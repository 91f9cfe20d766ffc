"""On a real PHP library (Doctrine Inflector as Debian ships it), every cited range the report keeps exists."""

from __future__ import annotations

import shutil
from pathlib import Path

from foundation.settings import Settings
from graph.evidence import line_count
from graph.schemas import AcceptanceCriterion, Analysis, Decomposition, Evidence
from tests.fakes.forge import FakeForge
from tests.fakes.model_server import answer, scripted
from tests.graph.conftest import init_repo, need
from tests.graph.investigation.conftest import ISSUE, Runner, task_state
from tests.graph.runtime.script import call

LIBRARY = Path("/usr/share/php/Doctrine/Inflector")
INFLECTOR = "src/Inflector.php"


def _tableize_lines(root: Path) -> tuple[int, int]:
    lines = (root / INFLECTOR).read_text().splitlines()
    start = next(n for n, text in enumerate(lines, 1) if "function tableize(" in text)
    end = next(n for n, text in enumerate(lines[start:], start + 1) if text.strip() == "}")
    return start, end


async def test_only_existing_ranges_survive_on_a_real_library(tmp_path: Path, settings: Settings,
                                                              forge: FakeForge) -> None:
    need(LIBRARY.is_dir(), "php-doctrine-inflector under /usr/share/php")
    root = tmp_path / "inflector"
    shutil.copytree(LIBRARY, root / "src")
    init_repo(root)
    start, end = _tableize_lines(root)
    total = line_count(root, INFLECTOR)
    assert total is not None
    cited = [
        Evidence(path=INFLECTOR, start_line=start, end_line=end, note="tableize()"),
        Evidence(path=INFLECTOR, start_line=total - 2, end_line=total + 40, note="runs past the end"),
        Evidence(path="src/Pluralizer.php", start_line=1, end_line=10, note="no such file"),
        Evidence(path="src/Rules/English/Inflectible.php", start_line=1, end_line=5, note="exists"),
    ]
    analyzer = scripted([
        call("find_definition", name="Doctrine\\Inflector\\Inflector::tableize"),
        call("finish_exploration", files=[INFLECTOR], reason="tableize found"),
        answer(Analysis, Analysis(summary="tableize inserts underscores", evidence=cited)),
    ])
    criteria = Decomposition(criteria=[AcceptanceCriterion(id=1, text="Name where class names become tables")])
    models = {"decomposer": scripted([answer(Decomposition, criteria)]), "analyzer": analyzer}
    result = await Runner(settings, forge, models.__getitem__, task_state(root, settings)).run()
    definition = str(analyzer.received[1][-1].content)
    assert f'"start_line":{start}' in definition.replace(" ", "")  # the code graph agrees with the source
    kept = result["analysis"]["evidence"]
    expected = [(INFLECTOR, start), ("src/Rules/English/Inflectible.php", 1)]
    assert [(e["path"], e["start_line"]) for e in kept] == expected
    for e in kept:
        count = line_count(root, e["path"])
        assert count is not None and 1 <= e["start_line"] <= e["end_line"] <= count
    assert len(result["analysis"]["dropped_evidence"]) == 2
    report = forge.comments[ISSUE][-1].split("**Citations dropped**")[0]
    assert f"`{INFLECTOR}:{start}-{end}` tableize()" in report and "runs past the end" not in report
