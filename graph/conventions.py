"""The project standards a role writes or judges code by, as a bounded block of its system prompt.

Prompts and standards carry the language's rules; the profile names the document
(`standards/<name>.md`), `.forgebot.yml` names the profile. The coder, the reviewer and the planner
roles get it. It competes with the task's code for the context window, so it has its own cap: whole
`##` sections are kept in order while they fit (`fit_to_budget`), and the ones left out are named.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import prompts
import standards
from graph.runtime.budget import estimate_tokens, fit_to_budget
from graph.runtime.tasklimits import config_revision
from project.repoconfig import RepoConfig, RepoConfigError, defaults_at, load_repo_config

# tokens of the standards block in a system prompt (php.md is ~1,000 by the pessimistic estimate)
STANDARDS_BUDGET_TOKENS = 1200
_SECTION = re.compile(r"(?m)^(?=## )")


def standards_block(config: RepoConfig, budget_tokens: int = STANDARDS_BUDGET_TOKENS) -> str:
    """The profile's standards inside a `<standards>` boundary, cut to `budget_tokens` by section."""
    try:
        name = config.resolve_profile().standards
    except (RepoConfigError, ValueError, LookupError):
        name = ""
    if not name:  # no profile matched (or the named one is broken): no language's rules are imposed
        choice = config.profile_choice()
        why = choice.reason if choice.name is None else f"the profile `{choice.name}` names no standards document"
        return prompts.boundary("standards", "none", f"No language standards apply to this repository ({why}); "
                                "follow the conventions of the code around each change.")
    text = standards.load(name)
    frame = prompts.boundary("standards", f"standards/{name}.md", "")
    sections = [s.strip() for s in _SECTION.split(text) if s.strip()]
    room = budget_tokens - estimate_tokens(frame) - 40  # 40: the line naming what was left out
    fit = fit_to_budget(sections, max(0, room))
    body = "\n\n".join(fit.kept)
    if fit.dropped:
        titles = [s.splitlines()[0].lstrip("# ") for s in sections[len(fit.kept):]]
        body += f"\n\n(Left out for the prompt budget: {', '.join(titles)}.)"
    return prompts.boundary("standards", f"standards/{name}.md", body)


def config_for(state: Mapping[str, Any]) -> RepoConfig:
    """`.forgebot.yml` where the task reads it (`config_revision`: the implement task's base, a review's
    target branch, never the change under review), with the profile detected there when it names none;
    defaults when there is no checkout or the file is unreadable: the gates report that, not the prompt."""
    if not state.get("workspace"):
        return RepoConfig()
    revision = config_revision(state)
    try:
        return load_repo_config(Path(state["workspace"]), revision)
    except (RepoConfigError, OSError):
        return defaults_at(Path(state["workspace"]), revision)


def standards_for(state: Mapping[str, Any]) -> str:
    """The standards block for a task, from the profile its `.forgebot.yml` names."""
    return standards_block(config_for(state))
