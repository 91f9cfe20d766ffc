"""`forgebot` as its user types it: the installed console script in its own process, with only the
`FORGEBOT_*` variables a test gives, from a scratch directory (never the source tree)."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

FORGEBOT = Path(sys.executable).parent / "forgebot"  # the console script `pip install` wrote


@dataclass(frozen=True)
class Typed:
    """What the user saw: the exit status and the lines of each stream."""

    code: int
    out: list[str]
    err: list[str]

    @property
    def text(self) -> str:
        return "\n".join(self.out + self.err)


TIMEOUT = 240.0  # seconds: a fresh interpreter on a shared, busy machine


def forgebot(*argv: str, cwd: Path, **env: str) -> Typed:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("FORGEBOT_")}
    done = subprocess.run([str(FORGEBOT), *argv], cwd=cwd, env={**clean, **env}, capture_output=True, text=True,
                          timeout=TIMEOUT)
    return Typed(done.returncode, done.stdout.splitlines(), done.stderr.splitlines())
