"""`forgebot run`: one task on a local checkout, printed for a terminal.

What the bot would have posted is printed as text (the forge's HTML, hidden markers and `<sub>`
footers removed), then the branch and patch it left; notices (uncommitted changes left out) and
the closing line go to stderr. The closing line says how the task ended, what to do next and
`forgebot trace TASK`. Exit status: 0 only when the task reached its goal (a report, a delivered
change, a review); 1 when it ran and did not; 2 when it could not start (configuration, model
endpoint, not a checkout); 3 when it waits for an answer (`--answer TEXT` resumes it).
"""

from __future__ import annotations

import argparse
import logging
import re
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from project.index.progress import INTERRUPTED

if TYPE_CHECKING:
    from bot.worker.local import LocalResult
    from foundation.settings import Settings

REACHED, NOT_REACHED, NOT_STARTED, WAITING = 0, 1, 2, 3
_MARKER = re.compile(r"<!--.*?-->", re.S)
_TAG = re.compile(r"</?(sub|sup|details|summary|small|b|i|em|strong)>|<br\s*/?>", re.I)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = sub.add_parser("run", help="one task on a local checkout, no forge needed")
    run.add_argument("--repo", required=True, help="path of the checkout (its top directory)")
    run.add_argument("--mode", choices=["analyze", "implement", "review"])
    text = run.add_mutually_exclusive_group()
    text.add_argument("--task", help="the task text (first line is the title)")
    text.add_argument("--task-file", help="read the task text from a file")
    text.add_argument("--answer", metavar="TEXT", help="answer the questions of the run waiting in this checkout "
                      "and resume it (the newest, or --task-id)")
    run.add_argument("--task-id", help="with --answer: the waiting run to resume")
    run.add_argument("--base", help="review: the branch the checked-out branch is compared with; "
                     "analyze/implement: the commit to start from (default HEAD)")
    run.set_defaults(handler=_run, parser=run)


def terminal_text(markdown: str) -> str:
    """A forge comment as a terminal shows it: no hidden markers, no HTML tags, no runs of blank lines."""
    text = _TAG.sub("", _MARKER.sub("", markdown))
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def _usage(args: argparse.Namespace) -> str | None:
    if args.answer is not None:
        if args.mode or args.base:
            return "--answer resumes a waiting run: it takes no --mode or --base"
        return None
    if args.task_id:
        return "--task-id goes with --answer"
    if not args.mode or (args.task is None and args.task_file is None):
        return "a new run needs --mode and --task (or --task-file); --answer resumes a waiting one"
    return None


def _run(args: argparse.Namespace) -> int:
    import asyncio

    from bot.worker.local import LocalRunError, ModelProblem, answer_local, one_line, run_local
    from foundation.gitrunner import GitTampered
    from graph.routing import ModeUnavailable

    problem = _usage(args)
    if problem:
        args.parser.error(problem)
    settings: Settings = args.settings
    if "log_level" not in settings.model_fields_set:  # a terminal wants the result, not every HTTP request
        logging.getLogger().setLevel(logging.WARNING)

    def notify(line: str) -> None:
        sys.stderr.write(f"forgebot run: {line}\n")

    try:
        if args.answer is not None:
            result = asyncio.run(answer_local(settings, Path(args.repo), args.answer, args.task_id))
        else:
            task = args.task if args.task is not None else Path(args.task_file).read_text(encoding="utf-8")
            result = asyncio.run(run_local(settings, Path(args.repo), args.mode, task, base=args.base,
                                           notify=notify))
    except (ModeUnavailable, FileNotFoundError, LocalRunError, GitTampered, ModelProblem) as exc:
        notify(one_line(exc, settings))
        return NOT_STARTED
    except KeyboardInterrupt:  # the run's task, once recorded, is marked cancelled on the way out
        notify("interrupted; a started run is recorded as cancelled (forgebot tasks)")
        return INTERRUPTED
    _print(result, Path(args.repo).resolve())
    code, last = closing(result, Path(args.repo).resolve(), settings)
    sys.stdout.flush()
    if result.failure is not None and result.failure.detail:
        notify(f"{result.failure.kind}: {result.failure.detail}")
    notify(last)
    return code


def _print(result: LocalResult, root: Path) -> None:
    for comment in result.comments:
        sys.stdout.write(terminal_text(comment) + "\n\n")
    if result.branch:
        sys.stdout.write(f"Branch {result.branch} in {root} holds {result.commits} new commit(s); your checkout, "
                         "branch and HEAD were not touched.\n\n")
        sys.stdout.flush()  # the patch as git's bytes, after the text: a Windows-1252 file's lines stay its own
        sys.stdout.buffer.write(result.patch)
        sys.stdout.buffer.flush()


# why a run that ended on its own did not reach its goal, where the output above says more
NOT_GOAL = {
    "blocked": "information is missing; the report above says what",
    "incomplete": "the review could not verify everything; it says above what it could not",
    "no_branch": "there is no branch to review",
}


def closing(result: LocalResult, root: Path, settings: Settings) -> tuple[int, str]:
    """The exit status and the closing line: how the task ended, the next step, and its trace."""
    from bot.worker.local import one_line

    task = f"task {result.task_id} · the whole story: forgebot trace {result.task_id}"
    record = result.failure
    if record is not None:
        where = f", in {record.where()}" if record.where() != "?" else ""
        return NOT_REACHED, f"failed: {record.reason.rstrip('.')} ({record.kind}{where}); " \
                            f"{record.operator_action} · {task}"
    state = result.state
    if result.outcome == "need_info":
        asked = len(state.get("questions") or [])
        again = f"forgebot run --repo {shlex.quote(str(root))} --answer 'YOUR ANSWER'"
        return WAITING, f"waiting for your answer to {asked} question(s) above; answer with: {again} · {task}"
    if result.reached_goal:
        return REACHED, f"done ({result.outcome}) · {int(state.get('tokens') or 0)} tokens · {task}"
    why = NOT_GOAL.get(result.outcome) or one_line(Exception(state.get("failure") or "it ended without a result"),
                                                   settings)
    if result.outcome == "blocked" and state.get("blocked_by") == "model":  # whose answer is missing
        why = f"the model gave no usable answer ({state.get('blocked_reason') or 'none'}), not the task's text"
    return NOT_REACHED, f"did not reach its goal ({result.outcome or 'no outcome'}): {why} · {task}"
