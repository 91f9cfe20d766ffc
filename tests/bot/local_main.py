"""`forgebot run` as a user runs it, with scripted models in place of the LLM.

`python -m tests.bot.local_main ARGS...` puts the implement route's scripted roles (one pass
through every role, `tests.graph.implement.route`) where `bot.worker.local` asks for a chat model, then
runs the real command line with ARGS: settings from the environment, the real checkpointer,
git and PHP gates.
"""

from __future__ import annotations

import sys

import bot.worker.local
from bot.cli.main import main
from tests.graph.implement import python_route, route


async def _answering(_llm: object, _notify: object = None) -> None:
    return None


# the PHP project's Calculator with a German comment, which `--legacy` expects committed in Windows-1252
LEGACY_CALCULATOR = route.CALCULATOR.replace("        return $a + $b;\n", "        return $a + $b; // Größe\n")


def run(argv: list[str]) -> int:
    """`--python` first: the roles of the Python fixture package (`python_route`); `--legacy`: the PHP
    project's, its Calculator holding `LEGACY_CALCULATOR`; else the PHP project's."""
    coder = route.coder_happy()
    if argv[:1] == ["--legacy"]:
        argv = argv[1:]
        multiply = route.MULTIPLY.replace("        return $a + $b;\n", "        return $a + $b; // Größe\n")
        coder = [route.patch(route.CALC, LEGACY_CALCULATOR, multiply), *coder[1:]]
    roles = route.models(
        decomposer=[route.decomposition()], analyzer=[route.analysis()],
        planner=[route.plan(route.ONE_ITEM)], architect=route.approve_plan(),
        coder=coder, reviewer=route.review(),
    )
    if argv[:1] == ["--python"]:
        argv, roles = argv[1:], python_route.roles()
    setattr(bot.worker.local, "chat_model", lambda _llm, role: roles[role])  # noqa: B010 (a test hook)
    setattr(bot.worker.local, "check_config", lambda _llm: None)  # noqa: B010 (scripted roles need no endpoint)
    setattr(bot.worker.local, "probe_models", _answering)  # noqa: B010 (nor a probe of it)
    return main(argv)


if __name__ == "__main__":
    raise SystemExit(run(sys.argv[1:]))
