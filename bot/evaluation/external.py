"""run_command(): external tools (dpkg-query, php, phpunit) with a clean environment; git goes through
`foundation.gitrunner`.

Evaluated code and tools never see the evaluator's environment: model keys and forge tokens stay
in this process. A fixed PATH keeps results independent of the caller's shell.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

CLEAN_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}


class CommandError(RuntimeError):
    """A tool that must succeed did not (or is not installed)."""


@dataclass(frozen=True)
class Completed:
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool = False


def run_command(args: list[str], cwd: Path | None = None, timeout: float = 120.0, check: bool = True) -> Completed:
    """Run `args`; with `check`, a non-zero exit raises CommandError carrying stderr."""
    try:
        proc = subprocess.run(
            args, cwd=cwd, env=CLEAN_ENV, capture_output=True, text=True, timeout=timeout, check=False
        )
    except FileNotFoundError as exc:
        raise CommandError(f"{args[0]} is not installed") from exc
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        if check:
            raise CommandError(f"{' '.join(args[:3])} timed out after {timeout:.0f}s") from exc
        return Completed(returncode=-1, stdout=out, stderr=f"timed out after {timeout:.0f}s", timed_out=True)
    if check and proc.returncode != 0:
        raise CommandError(f"{' '.join(args[:3])} exited {proc.returncode}: {proc.stderr.strip()[:500]}")
    return Completed(returncode=proc.returncode, stdout=proc.stdout, stderr=proc.stderr)
