"""Code quality of what a run changed: PHP syntax errors and unresolved symbols it introduced.

Syntax comes from `php -l` on each changed `.php` file. Unresolved symbols are best effort:
`symbols.php` parses a file with nikic/php-parser, resolves every class-like and function name
through the file's namespace and `use` imports, loads the workspace's autoloader and asks PHP
whether each exists (`class_exists`, `interface_exists`, `trait_exists`, `enum_exists`,
`function_exists`, with the global fallback for functions). A name counts as introduced when it is
unresolved after the run and the file did not refer to it before. Dynamic names (`new $class`,
strings) and names only in docblocks are not seen.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from bot.evaluation.external import run_command
from bot.evaluation.taskrepos import Workspace, file_at


@dataclass(frozen=True)
class Quality:
    php_files_changed: int = 0
    syntax_errors: list[str] = field(default_factory=list)
    unresolved_symbols: list[str] = field(default_factory=list)
    note: str = ""


def syntax_errors(root: Path, files: list[str]) -> list[str]:
    """`php -l` each existing file; a failure is reported as `path: message`."""
    errors = []
    for rel in files:
        if not (root / rel).is_file():
            continue  # deleted by the run
        done = run_command(["php", "-l", "-d", "display_errors=stderr", rel], cwd=root, check=False)
        if done.returncode != 0:
            message = (done.stderr or done.stdout).strip().splitlines()
            errors.append(f"{rel}: {message[0] if message else 'syntax error'}")
    return errors


class SymbolCheckError(RuntimeError):
    """symbols.php could not run (php-parser missing, the autoloader failing)."""


def _names(bootstrap: str, files: list[Path], cwd: Path) -> dict[str, dict[str, list[str]]]:
    script = resources.files("bot.evaluation").joinpath("symbols.php")
    with resources.as_file(script) as path:
        done = run_command(["php", str(path), bootstrap, *map(str, files)], cwd=cwd, check=False, timeout=120)
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        raise SymbolCheckError(lines[-1] if lines else f"exit {done.returncode}")
    result = {}
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            item = json.loads(line)
            result[item["file"]] = {"names": item["names"], "unresolved": item["unresolved"]}
    return result


def unresolved_introduced(ws: Workspace, bootstrap: str | None, files: list[str]) -> list[str]:
    """Names unresolved after the run that the file's start version did not refer to (`name@path:line`)."""
    present = [rel for rel in files if (ws.root / rel).is_file()]
    if not present:
        return []
    boot = str(ws.root / bootstrap) if bootstrap else "-"
    after = _names(boot, [ws.root / rel for rel in present], ws.root)
    with tempfile.TemporaryDirectory(prefix="fb-before-") as tmp:
        before_paths = {}
        for number, rel in enumerate(present):
            text = file_at(ws, ws.start_commit, rel)
            if text is not None:
                before_paths[rel] = Path(tmp) / f"{number}.php"
                before_paths[rel].write_text(text, encoding="utf-8")
        before = _names("-", list(before_paths.values()), ws.root) if before_paths else {}
    introduced = []
    for rel in present:
        known = set(before.get(str(before_paths[rel]), {}).get("names", [])) if rel in before_paths else set()
        for entry in after.get(str(ws.root / rel), {}).get("unresolved", []):
            name, _, line = entry.rpartition("@")
            if name not in known:
                introduced.append(f"{name}@{rel}:{line}")
    return introduced


def assess(ws: Workspace, changed: list[str], bootstrap: str | None) -> Quality:
    """Syntax errors and introduced unresolved symbols over the changed PHP files."""
    php = [rel for rel in changed if rel.endswith(".php")]
    if not php:
        return Quality()
    errors = syntax_errors(ws.root, php)
    broken = {e.split(":", 1)[0] for e in errors}
    note = "" if bootstrap else "no autoloader declared: unresolved symbols checked against PHP built-ins only"
    try:
        unresolved = unresolved_introduced(ws, bootstrap, [rel for rel in php if rel not in broken])
    except SymbolCheckError as exc:
        # an unknown count is reported as unknown, never as zero
        unresolved, note = [], f"unresolved-symbol check did not run: {str(exc)[:200]}"
    return Quality(php_files_changed=len(php), syntax_errors=errors, unresolved_symbols=unresolved, note=note)
