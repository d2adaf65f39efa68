"""`python -m tiny_graphrag.cli`: the same as the `tiny-graphrag` command."""

from tiny_graphrag.cli.commands import main

raise SystemExit(main())
