"""The agent graph: roles as nodes, routing as pure functions, clients in the runtime context."""
