"""Evaluation: fingerprinted runs of PHP task sets with verifiable outcomes (`forgebot eval`).

Modules: `taskset` (the task file model), `taskrepos` (a git repository per task from a Debian
package), `verification` and `quality` (the checks), `execution` (tasks through `run_local`),
`usage` (tokens per role), `scripted` (the synthetic model) and `baseline` (its answers),
`fingerprint`, `report`, `compare`. The command itself is `bot.cli.eval_cli`, which imports these
only when `eval` runs: the graph and the model clients stay unloaded for every other command.
"""
