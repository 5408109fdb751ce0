"""``python -m zatile``: the command-line interface."""

from zatile.sw.cli import main

raise SystemExit(main())
