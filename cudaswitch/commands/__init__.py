"""Command handlers: each takes the keyword arguments the command table declares, calls the core and
renders; the return value is the exit status. None of them imports typer."""

import os

from cudaswitch.paths import Paths


def load_registry(refresh: bool = False) -> "tuple[Paths, dict]":
    from cudaswitch.registry import discover

    paths = Paths()
    return paths, discover.load(paths, dict(os.environ), refresh=refresh)
