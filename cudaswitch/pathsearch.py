"""The one PATH lookup. Import-light (os only): the `use` cache hit and the probes share it."""

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cudaswitch.toolkit import Env


def which(name: str, env: "Env") -> "str | None":
    """First executable `name` on env's PATH. Only absolute entries count: an empty or relative
    entry (`PATH=$PATH:bin`, `PATH=$PATH:`) would find a cloned repository's own nvcc or gcc."""
    for directory in (env.get("PATH") or "").split(":"):
        if not directory.startswith("/"):
            continue
        candidate = os.path.join(directory, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None
