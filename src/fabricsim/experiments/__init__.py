"""Experiments: running scenarios (the run budget first; run, compare, study, sweep to follow)."""
