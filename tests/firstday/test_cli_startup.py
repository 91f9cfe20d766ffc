"""A quick command line: `forgebot --help` and the light commands' help import neither the agent
(LangChain, LangGraph), the SDKs nor the index; only the named command's module is loaded.

An import-graph check, not a timing: the figures are `tests/bench/bench_cli.py`'s.
"""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys

import pytest

from bot.cli.main import COMMANDS

# what made `forgebot --help` take seconds: each is imported by some command, none is needed to list them
HEAVY = {"langchain_core", "langchain_openai", "langchain_anthropic", "langgraph", "numpy", "onnxruntime",
         "tokenizers", "tree_sitter", "sqlite_vec", "gitlab", "github", "starlette", "uvicorn", "arq", "redis",
         "pydantic", "pydantic_settings", "httpx", "requests", "yaml", "jinja2"}
PROBE = """
import json, sys
from bot.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
top = {name.split(".")[0] for name in sys.modules}
print(json.dumps(sorted(name for name in top if name not in sys.stdlib_module_names and not name.startswith("_"))))
"""


def _imported(*argv: str) -> set[str]:
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=120,
                          check=True)
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_help_imports_only_the_standard_library_and_the_command_line() -> None:
    assert _imported("--help") == {"bot"}


@pytest.mark.parametrize("command", ["run", "tasks", "trace", "check", "eval"])
def test_a_light_commands_help_loads_no_agent_sdk_or_index(command: str) -> None:
    assert not _imported(command, "--help") & (HEAVY - {"pydantic", "pydantic_settings"})


def test_the_command_table_is_what_each_module_registers() -> None:
    """The overview is written from the table: it must name exactly the commands the modules add,
    with the same help line."""
    for module in dict.fromkeys(module for module, _ in COMMANDS.values()):
        sub = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(module).register(sub)
        registered = {action.dest: action.help for action in sub._choices_actions}
        listed = {name: text for name, (owner, text) in COMMANDS.items() if owner == module}
        assert registered == listed, module
