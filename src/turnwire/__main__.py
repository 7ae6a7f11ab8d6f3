"""``python -m turnwire`` runs the command line."""

import sys

from turnwire.cli import main

sys.exit(main())
