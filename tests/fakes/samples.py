"""Access to the forge samples copied verbatim from `shared/forge-samples/` (see its README)."""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

SAMPLES = Path(__file__).resolve().parent.parent / "fixtures" / "forge-samples"


@cache
def _raw(relative: str) -> bytes:
    return (SAMPLES / relative).read_bytes()


def sample_bytes(relative: str) -> bytes:
    """The sample file's exact bytes (what a forge would put on the wire)."""
    return _raw(relative)


def sample(relative: str) -> dict[str, Any]:
    """A fresh decoded copy of a sample; callers may mutate it to derive variants."""
    return copy.deepcopy(json.loads(_raw(relative)))
