"""The first day in production: each unhappy situation a new installation meets, run through the
running service or the CLI as its user would, asserting what that user sees (the comment's text, the
console's page, the exit code, how many log lines it cost).

Files by side, so parallel work does not collide: `test_service_*.py` (serve, web, worker, receiver,
console), `test_cli_*.py` (`forgebot run`, `check`, the configuration), `test_model_*.py` (what
the model is asked and how its answers settle). Shared helpers live in `service.py` (a `forgebot`
process against the fake forge, a wire-level model server and a git server) and `conftest.py`.
"""
