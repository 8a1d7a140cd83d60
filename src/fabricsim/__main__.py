"""``python -m fabricsim`` runs the command line."""

import sys

from fabricsim.cli import main

sys.exit(main())
