"""`python -m bot ...` is `forgebot ...`."""

from bot.cli.main import main

raise SystemExit(main())
