"""The agent runtime: the shared tool loop and the mechanisms around it.

`loop` runs a role's model with tools; `injection` keeps the role's target files current in the
system message; `scratchpad` holds the scratchpad, pruning and the handoff summary; `guard` recognises
dead ends; `budget` and `accounting` bound and count calls and tokens; `context` fills a token
budget by priority; `trace` writes the story of a task as JSON lines.
"""
