"""``python -m fabricsim`` runs the command line."""

import sys

from fabricsim.cli import program

sys.exit(program())
