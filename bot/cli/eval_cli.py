"""`forgebot eval TASKSET` and `forgebot eval compare A B`: the evaluation's command line.

`register()` adds the subcommand; `bot/cli/main.py` sets `args.settings` and `args.data_dir` before
calling the handler. The harness is imported inside the handlers: building the parser for
`forgebot web` must not load the graph.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path


def _write(line: str) -> None:
    sys.stderr.write(line + "\n")


def _eval(args: argparse.Namespace, path: Path) -> int:
    from bot.evaluation.execution import Prices, RunOptions, run_taskset
    from bot.evaluation.external import CommandError
    from bot.evaluation.report import write_reports
    from bot.evaluation.taskset import TaskSetError, load_taskset
    from foundation.llm import ModelConfigError, chat_model

    try:
        taskset = load_taskset(path)
    except TaskSetError as exc:
        _write(f"forgebot eval: {exc}")
        return 2
    if not args.scripted:
        try:
            chat_model(args.settings.llm, "decomposer")  # fail before any task, not once per task
        except ModelConfigError as exc:
            _write(f"forgebot eval: {exc} (or pass --scripted for a synthetic run)")
            return 2
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    out = Path(args.out) if args.out else Path(args.data_dir) / "eval" / f"{taskset.name}-{stamp}"
    prices = Prices(args.price_input, args.price_output) if args.price_input is not None else None
    with tempfile.TemporaryDirectory(prefix="forgebot-eval-") as work:
        options = RunOptions(settings=args.settings, work_dir=Path(args.work_dir or work),
                             synthetic=args.scripted, prices=prices, progress=_write)
        try:
            report = asyncio.run(run_taskset(taskset, path, options))
        except CommandError as exc:
            _write(f"forgebot eval: {exc}")
            return 2
    json_path, md_path = write_reports(report, out)
    summary = " · ".join(f"{k} {v}" for k, v in report.summary.items())
    sys.stdout.write(f"{summary}\n{json_path}\n{md_path}\n")
    if report.synthetic:
        sys.stdout.write(report.notice + "\n")
    return 0


def _compare(a: str, b: str) -> int:
    from bot.evaluation.compare import IncomparableReports, compare_reports, render_comparison
    from bot.evaluation.report import load_report

    try:
        comparison = compare_reports(load_report(Path(a)), load_report(Path(b)))
    except IncomparableReports as exc:
        _write(f"forgebot eval compare: {exc}")
        return 3
    except ValueError as exc:
        _write(f"forgebot eval compare: {exc}")
        return 2
    sys.stdout.write(render_comparison(comparison))
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `eval TASKSET [--out DIR] [--scripted]` and `eval compare A B` to the `forgebot` parser."""
    ev = sub.add_parser(
        "eval",
        help="run a task set and write a fingerprinted report; `eval compare A B` compares two reports",
        usage="forgebot eval TASKSET [--out DIR] [--scripted] | forgebot eval compare A.json B.json",
    )
    # one positional list instead of subparsers: argparse cannot mix a TASKSET positional with a
    # `compare` subcommand on the same parser
    ev.add_argument("target", nargs="+", metavar="TASKSET | compare A B")
    ev.add_argument("--out", help="report directory (default: DATA_DIR/eval/NAME-TIME)")
    ev.add_argument("--scripted", action="store_true",
                    help="use the synthetic scripted model (proves the machinery; not a measure of effectiveness)")
    ev.add_argument("--work-dir", help="keep the task workspaces here instead of a temporary directory")
    ev.add_argument("--price-input", type=float, help="USD per million input tokens, for cost figures")
    ev.add_argument("--price-output", type=float, default=0.0, help="USD per million output tokens")
    ev.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    """Dispatch `eval TASKSET` or `eval compare A B`."""
    target: list[str] = args.target
    if target[0] == "compare":
        if len(target) != 3:
            _write("usage: forgebot eval compare A.json B.json")
            return 2
        return _compare(target[1], target[2])
    if len(target) != 1:
        _write("usage: forgebot eval TASKSET [--out DIR] [--scripted]")
        return 2
    return _eval(args, Path(target[0]))
