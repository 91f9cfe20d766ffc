"""The task console: read-only pages that show what the bot did, why, and what it cost.

Served by `forgebot web` (and `serve`) under `/console` when a console secret is configured
(docs/console.md). A per-task page opens with a signed, expiring link from the task's status comment;
the task list and health pages need the operator token. Nothing here writes to the store, the queue or
the forge.
"""
