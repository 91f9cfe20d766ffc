"""Command words in comment text: `/implement`, `/analyze`, `/review`, `/cancel`.

A command counts only as the first word of the comment's first line, and never when that line is
quoted (`>`), fenced or indented code, or inline code: people quote the bot's own instructions,
paste logs and discuss commands in prose, and none of that may start a task.
"""

from __future__ import annotations

from typing import Literal

from foundation.settings import TriggerSettings

Command = Literal["implement", "analyze", "review", "cancel"]


def first_line_command(text: str, triggers: TriggerSettings) -> Command | None:
    """The command the comment starts with, or `None` when its first line is not a command."""
    lines = text.lstrip("\ufeff\r\n").splitlines()
    if not lines:
        return None
    line = lines[0]
    if line.startswith(("    ", "\t")):  # an indented code block
        return None
    words = line.strip().split()
    if not words:
        return None
    word = words[0]
    commands: dict[str, Command] = {
        triggers.implement_command.lower(): "implement",
        triggers.analyze_command.lower(): "analyze",
        triggers.review_command.lower(): "review",
        triggers.cancel_command.lower(): "cancel",
    }
    # quotes (`>`), fences (```` ``` ````, `~~~`) and inline code never equal a command word
    return commands.get(word.lower())
