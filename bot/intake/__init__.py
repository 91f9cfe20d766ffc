"""What comes in, and whether to trust it: webhooks verified and parsed (`webhooks`), request bodies
bounded in size and time (`bodies`), repository and bot identity learnt from the forge (`identity`),
a repository's trigger labels (`repolabels`), and who may ask for what (`authz`).

Everything here treats its input as untrusted and fails closed. It records deliveries and queues
jobs through `bot.tasks`, and never imports the worker.
"""
