"""``python -m benchmarks NAME [--json]``: what ``./dev bench NAME`` runs."""

import sys

from benchmarks.cli import main

sys.exit(main())
