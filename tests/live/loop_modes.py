# ruff: noqa: T201 - a command-line script: its figures are its output
"""Loop many tasks per mode of `forgebot run` against the live model and count how each ended.

    .venv/bin/python -m tests.live.loop_modes --per-mode 10 [--modes analyze,implement,review]

Every run's end is classified by the lane's oracle (`tests.live.oracle`): finished, model incapable
(its answers were invalid after repair, and the product said so), or product error (an exception, a
request the server rejected, a missing footer or reason). The figures are the live lane's goal: 0
product errors over at least 10 different tasks per mode.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path

from bot.worker.local import ModelProblem, one_line, run_local
from foundation.settings import Settings
from tests.live.conftest import live_llm, php_checkout
from tests.live.llama import LlamaServer
from tests.live.oracle import classify, trace_events

TASKS = [
    "Add subtraction\nThe calculator needs a subtract(a, b) method returning a - b.",
    "Division by zero\ndivide(1, 0) should throw an InvalidArgumentException instead of a PHP error.",
    "Add multiply\nAdd multiply(a, b) to the Calculator class.",
    "Document the calculator\nEvery public method of Calculator needs a PHPDoc block.",
    "Floats\nadd() must accept floats as well as integers.",
    "Percentages\nAdd percent(value, rate) returning value * rate / 100.",
    "Rounding\ndivide() results should be rounded to two decimals.",
    "Strict types\nDeclare strict_types=1 in every source file.",
    "Square root\nAdd sqrt(x) that rejects negative numbers with an exception.",
    "Average\nAdd average(array $numbers) that returns 0 for an empty array.",
    "Modulo\nAdd mod(a, b) and make it reject a zero divisor.",
    "Power\nAdd pow(base, exp) for integer exponents >= 0.",
]


async def _one(settings: Settings, root: Path, mode: str, task: str) -> tuple[str, str]:
    repo = php_checkout(root)
    try:
        result = await run_local(settings, repo, mode, task, base="main")  # type: ignore[arg-type]
    except ModelProblem as exc:
        reason, comments = one_line(exc, settings), []
    else:
        # a run that failed after it started keeps its comments
        reason = one_line(result.error, settings) if result.error is not None else str(result.outcome)
        comments = result.comments
    end = classify(trace_events(settings.data_dir), comments, reason, window=settings.llm.context_window_tokens)
    return end.verdict, f"{reason[:80]} · {end}"


async def main(per_mode: int, modes: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="fb-live-") as tmp:
        server = LlamaServer(Path(tmp) / "llama.log")
        try:
            errors = 0
            figures: dict[str, Counter[str]] = {mode: Counter() for mode in modes}
            # task by task across the modes, so a run cut short still covers every mode
            for index, task in enumerate(TASKS[:per_mode]):
                for mode in modes:
                    root = Path(tmp) / f"{mode}-{index}"
                    settings = Settings(_env_file=None, data_dir=root / "data", llm=live_llm(server))  # type: ignore[call-arg]
                    started = time.monotonic()
                    try:
                        outcome, detail = await _one(settings, root, mode, task)
                    except Exception:  # the thing this lane exists to find
                        outcome, detail = "product error", traceback.format_exc()
                    errors += outcome == "product error"
                    figures[mode][outcome] += 1
                    print(f"{mode:9} {index:2} {time.monotonic() - started:6.1f}s {outcome:12} {detail}", flush=True)
                    print(f"  so far: {errors} product errors; { {m: dict(c) for m, c in figures.items()} }",
                          flush=True)
        finally:
            server.stop()
    print("\nmode       runs  product errors  outcomes")
    for mode, counts in figures.items():
        print(f"{mode:9} {sum(counts.values()):5}  {counts['product error']:14}  {dict(counts)}")
    print(f"product errors: {errors} over {sum(sum(c.values()) for c in figures.values())} runs")
    return 1 if errors else 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the llama server on the way out
    parser = argparse.ArgumentParser()
    parser.add_argument("--per-mode", type=int, default=10)
    parser.add_argument("--modes", default="analyze,implement,review")
    args = parser.parse_args()
    raise SystemExit(asyncio.run(main(args.per_mode, args.modes.split(","))))
