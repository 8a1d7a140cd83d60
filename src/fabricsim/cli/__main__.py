"""``python -m fabricsim.cli`` runs the command line (as ``python -m fabricsim`` does)."""

import sys

from fabricsim.cli import program

sys.exit(program())
