"""``python -m replyparse``: the command line (see :mod:`replyparse.cli`)."""

from __future__ import annotations

from replyparse.cli import main

raise SystemExit(main())
