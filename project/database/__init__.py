"""The project's own databases, read-only: one driver session per kind, and the statement check.

The investigation roles' database tools (`graph.tools.database`) reach a database only through
these: the drivers open sessions the server keeps read-only, the statement check refuses anything
but one reading statement before it is sent.
"""
