"""Entry point. `use`, `off`, `hook-env` and `current` run here without importing typer, rich,
json or packaging (see DESIGN.md budgets); every other command goes to the typer app."""

import sys

FAST_COMMANDS = ()


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in FAST_COMMANDS:
        pass
    from cudaswitch.cli import run

    return run(argv)
