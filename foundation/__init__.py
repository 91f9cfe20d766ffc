"""The bottom layer: talks to the outside world (forge adapters and their models, git, workspaces,
settings, metrics, arq's key layout). It imports no other forgebot package."""
