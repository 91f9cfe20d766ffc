"""The coder's machinery: patch application, the checklist it executes and the tools it is given."""
