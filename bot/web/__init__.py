"""The web process: the Starlette app (`app`) that mounts the receiver, the console and the probes,
and what `/readyz` says is missing (`readiness`).

It only composes: the receiver's work is `bot.intake`'s, the pages are `bot.console`'s.
"""
