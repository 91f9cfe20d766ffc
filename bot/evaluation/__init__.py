"""Evaluation: fingerprinted runs of PHP task sets with verifiable outcomes (`forgebot eval`).

Modules: `taskset` (the task file model), `workspace` (a git repository per task from a Debian
package), `verification` and `quality` (the checks), `runner` (tasks through `run_local`),
`usage` (tokens per role), `scripted` (the synthetic model) and `baseline` (its answers),
`fingerprint`, `report`, `compare`, `cli`. Only `register` is imported here, so adding the
subcommand to `forgebot` stays cheap: the graph and the model clients load when `eval` runs.
"""

from bot.evaluation.cli import register

__all__ = ["register"]
