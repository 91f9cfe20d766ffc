"""`python -m bot ...` is `forgebot ...`."""

from bot.cli import main

raise SystemExit(main())
