"""``python -m tether``: the same command line as the ``tether`` script."""

from tether.cli import main

raise SystemExit(main())
