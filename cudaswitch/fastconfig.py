"""The config keys `use` and the hook need on every switch, without importing tomllib.

Base layer: the switch plan reads `loader_path` (switch/ must not import verify/), `use`'s verdict
reads `verdict`.

config.toml is parsed (tomllib, ~3 ms of imports) only when its identity (mtime, size, inode)
changed; the answer is kept in a sealed marshal file beside the other caches, read through
safeio like every cache (a FIFO, a device or a huge or corrupt file there is a miss, never a hang).

- `verdict = "all" | "problems" | "off"`: which verdict lines `use` prints ("off" also skips
  verification; `--strict` still verifies).
- `loader_path = true | false`: whether a switch puts the toolkit's lib dirs on LD_LIBRARY_PATH.
  Default true: binaries built with the toolkit (no RUNPATH to its lib64) and CMake/Makefile
  projects find libcudart and friends only that way, which is most users of a switched shell. A
  pip torch brings its own NVIDIA libraries through its RUNPATH, and LD_LIBRARY_PATH comes first,
  so a toolkit older than those wheels breaks torch; the verdict then says so as an error and
  names this setting (false: switch PATH and CUDA_HOME only).
"""

import marshal
import os

from cudaswitch.safeio import file_identity, load_marshal, replace_regular, seal
from cudaswitch.settings import SWITCH_DEFAULTS as DEFAULTS, VERDICT_MODES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cudaswitch.paths import Paths

FILE = "settings.marshal"
MAX_BYTES = 64 << 10  # two small settings and a key: a few hundred bytes


def _identity(path: str) -> "tuple[int, int, int, int, int] | None":
    try:
        return file_identity(path)
    except OSError:
        return None


def switch_settings(paths: "Paths") -> dict:
    """{"verdict", "loader_path"}; a config that cannot be read gives the defaults (`list` and
    `verify` report its error; a switch must still work)."""
    key = _identity(paths.config_file)
    if key is None:
        return dict(DEFAULTS)
    where = os.path.join(paths.cache_dir, FILE)
    cached = load_marshal(where, MAX_BYTES)
    if isinstance(cached, dict) and cached.get("key") == key and _valid(cached.get("settings")):
        return cached["settings"]
    settings = _from_config(paths)
    try:
        replace_regular(where, seal(marshal.dumps({"key": key, "settings": settings})), make_dirs=True, own_file=True)
    except (OSError, ValueError):
        pass
    return settings


def _valid(settings):
    """The settings a cache holds, checked as the config is: anything else is a miss."""
    return (isinstance(settings, dict) and settings.get("verdict") in VERDICT_MODES
            and isinstance(settings.get("loader_path"), bool))


def _from_config(paths):
    from cudaswitch import config
    from cudaswitch.errors import CudaSwitchError

    try:
        cfg = config.load(paths)
    except CudaSwitchError:
        return dict(DEFAULTS)
    return {key: cfg.get(key, default) for key, default in DEFAULTS.items()}
