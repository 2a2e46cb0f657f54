"""config.toml: default toolkit, source order, extra search roots, registered toolkits, timeouts.

Read with tomllib (tomli before 3.11), written with tomli-w, atomically. A config that cannot be
parsed is an error naming the file and line; it is never overwritten by a later write.
"""

import os
import sys

from cudaswitch.errors import ConfigError
from cudaswitch.paths import atomic_write
from cudaswitch.request import SOURCES

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

DEFAULTS = {"source_order": list(SOURCES), "probe_timeout": 5.0}
TYPES = {
    "default": str,
    "source_order": list,
    "search_roots": list,
    "toolkits": list,
    "probe_timeout": (int, float),
    "python": str,
    "torch_timeout": (int, float),
    "probe_exec": bool,
    "redist_url": str,
    "verdict": str,
    "loader_path": bool,
}
VERDICT_MODES = ("all", "problems", "off")


def _read(path):
    """The file's own keys (no defaults); {} when absent; ConfigError naming file and line."""
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        return {}
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError("%s: %s" % (path, exc), "fix or remove the file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError("%s: cannot read: %s" % (path, exc)) from None


def load(paths):
    """The config as a dict with defaults filled in; ConfigError names file and line when bad."""
    data = _read(paths.config_file)
    _validate(paths.config_file, data)
    return {**DEFAULTS, **data}


def _validate(path, data):
    for key, value in data.items():
        wanted = TYPES.get(key)
        if wanted is None:
            continue  # unknown keys are kept: a newer cudaswitch may have written them
        if not isinstance(value, wanted) or (isinstance(value, bool) and wanted is not bool):
            raise ConfigError("%s: %r has the wrong type (%s)" % (path, key, type(value).__name__))
    if data.get("verdict", "all") not in VERDICT_MODES:
        raise ConfigError("%s: 'verdict' must be one of %s, not %r" % (path, ", ".join(VERDICT_MODES), data["verdict"]))
    unknown = [s for s in data.get("source_order", []) if s not in SOURCES]
    if unknown:
        raise ConfigError("%s: unknown source %r in source_order" % (path, unknown[0]),
                          "sources: " + ", ".join(SOURCES))


def update(paths, **changes):
    """Set (or, with value None, remove) keys and write the file atomically."""
    import tomli_w

    path = paths.config_file
    data = _read(path)
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    _validate(path, data)
    atomic_write(path, tomli_w.dumps(data).encode("utf-8"))
    return data
