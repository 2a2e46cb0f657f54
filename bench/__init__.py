"""Benchmarks of cudaswitch's hot paths against Lmod and direnv on the same machine, against the
budgets in the README. Run from the repository root: `python -m bench` (see bench/__main__.py). Not a test suite."""
