"""What a task is made of and where it is kept, shared by every part of the service.

The event that asked for it (`events`, with the command words of `commands`), the inbox that
records deliveries and tasks (`inbox` over `inboxsql`, with `batching`), its job on the arq queue
(`queue`, `jobcodec`), the lease of a running job (`leases`), which workers are alive (`presence`)
and the graph's checkpoints (`checkpoints`, with their safe serializer). The bottom of `bot`:
nothing here imports another part of the service.
"""
