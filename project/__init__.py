"""Subsystems the agent uses about the project it works on: the code index and project memory,
the profiles, sandbox and checks that run the project's own tools, the classifier, `.forgebot.yml`
and the embedder. They import only `foundation`, never the agent (`graph`) or the service (`bot`)."""
