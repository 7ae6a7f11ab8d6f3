"""``python -m turnwire`` runs the command line."""

import sys

from turnwire.cli.main import main

sys.exit(main())
