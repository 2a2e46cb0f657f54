"""The one PATH lookup. Import-light (os only): the `use` cache hit and the probes share it."""

import os


def which(name, env):
    """First executable `name` on env's PATH."""
    for directory in (env.get("PATH") or "").split(":"):
        candidate = os.path.join(directory or ".", name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None
