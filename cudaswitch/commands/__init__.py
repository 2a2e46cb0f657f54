"""Command handlers: each takes the keyword arguments the command table declares (its help there says
what the command does), calls the core and renders; the return value is the exit status. None of
them imports typer."""

import os

from cudaswitch.paths import Paths

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable


def registry_loader(refresh: bool = False) -> "tuple[Paths, Callable[[], dict]]":
    """This command's dirs, and the registry's loader for a command that may not need it (`torch`)."""
    from cudaswitch.registry import discover

    paths = Paths()
    return paths, lambda: discover.load(paths, dict(os.environ), refresh=refresh)


def load_registry(refresh: bool = False) -> "tuple[Paths, dict]":
    paths, load = registry_loader(refresh)
    return paths, load()
