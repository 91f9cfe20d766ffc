"""The worker: the arq job that runs a task's graph (`jobs`), and what keeps tasks honest around it.

A job holds a lease and runs under one active task per item; `recovery` reaps dead workers' jobs and
orphaned tasks, `expiry` ends tasks that waited too long for answers, `sweeper` re-queues deliveries
that never reached Redis, `retention` removes old checkpoints and worktrees, `idempotency` marks
forge writes so a replayed node edits instead of posting twice. `local` is the same job for
`forgebot run`: an in-memory forge and the local checkout. The worker may import the intake (to
authorize the actor and resolve the repository) and the console's links; neither imports it.
"""
