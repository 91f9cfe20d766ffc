"""Evaluation: fingerprinted runs of PHP task sets with verifiable outcomes (`forgebot eval`)."""

from bot.evaluation.cli import register
from bot.evaluation.compare import IncomparableReports, compare_reports
from bot.evaluation.report import Report, TaskResult, load_report, write_reports
from bot.evaluation.runner import Prices, RunOptions, run_taskset
from bot.evaluation.taskset import TaskSet, TaskSetError, load_taskset

__all__ = [
    "IncomparableReports",
    "Prices",
    "Report",
    "RunOptions",
    "TaskResult",
    "TaskSet",
    "TaskSetError",
    "compare_reports",
    "load_report",
    "load_taskset",
    "register",
    "run_taskset",
    "write_reports",
]
