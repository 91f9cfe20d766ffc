"""The `forgebot` command: its table (`main`), each command's module, and the processes behind
`serve`, `web` and `worker` (`serve`, with `children` and `redisserver`).

The top of the service: a command may use every other part of `bot`, and no part imports a command.
Importing this package loads nothing: `forgebot --help` must stay cheap.
"""
