"""The implement route's scripted roles on the Python fixture package (`tests/fixtures/python_project`):
`calc.multiply` added with its test, one pass through every role."""

from __future__ import annotations

from graph.schemas import Analysis, Decomposition
from tests.fakes.model_server import ScriptedModel, answer, scripted
from tests.graph.conftest import FIXTURES
from tests.graph.implement import route

CALC, TEST = "calc/__init__.py", "tests/test_calc.py"
SOURCE = (FIXTURES / "python_project" / CALC).read_text()
TESTS = (FIXTURES / "python_project" / TEST).read_text()
MULTIPLY = SOURCE + "\n\ndef multiply(a: int, b: int) -> int:\n    return a * b\n"
MULTIPLY_TEST = TESTS.replace("from calc import add, divide", "from calc import add, divide, multiply") + (
    "\n\ndef test_multiplies_two_numbers() -> None:\n    assert multiply(2, 3) == 6\n")


def roles() -> dict[str, ScriptedModel]:
    analysis = Analysis(summary="Add calc.multiply next to add", affected_files=[CALC, TEST], symbols=["calc.add"])
    scripts = route.models(
        decomposer=[answer(Decomposition, {"criteria": [{"id": 1, "text": "calc multiplies two integers"}]})],
        planner=[route.plan([route.item(1, "Add multiply with its test", CALC, TEST)], writable=(CALC, TEST))],
        architect=route.approve_plan(),
        coder=[route.patch(CALC, SOURCE, MULTIPLY), route.patch(TEST, TESTS, MULTIPLY_TEST),
               route.call("complete_item", item_id=1, note="multiply added with a test"), route.call("finish")],
        reviewer=route.review(),
    )
    scripts["analyzer"] = scripted([route.call("finish_exploration", files=[CALC], context_only=[TEST],
                                               reason="seen"), answer(Analysis, analysis)])
    return scripts
