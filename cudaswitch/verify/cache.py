"""The verdict cache of `use`: marshal file in the cache dir, read with built-in modules only.

An entry is valid while its key (computed by quick.dependency_key) is equal and every watched
path keeps its mtime (sys.path dirs of the probed Python, torch's dir: `pip install` changes them).
"""

import marshal
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from cudaswitch.paths import Paths

FORMAT = 2
MAX_ENTRIES = 32


def cache_file(paths: "Paths") -> str:
    return os.path.join(paths.cache_dir, "verdicts.marshal")


def load(path: str, entry_ok: "Callable[[object], bool] | None" = None) -> dict:
    """{key: entry}; a missing, corrupt or foreign file is an empty cache. entry_ok: what a valid
    entry looks like, where the file holds other entries than verdicts (the torch probe's)."""
    from cudaswitch.safeio import load_marshal

    data = load_marshal(path, 16 << 20)  # a FIFO, /dev/zero or a bit flip here must not hang `use`
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("entries"), dict):
        return {}
    return {k: v for k, v in data["entries"].items() if (entry_ok or _entry_ok)(v)}


def _entry_ok(entry):
    return (isinstance(entry, dict) and isinstance(entry.get("level"), str) and isinstance(entry.get("line"), str)
            and isinstance(entry.get("watch"), dict)
            and all(isinstance(p, str) and (m is None or type(m) is int) for p, m in entry["watch"].items()))


def unchanged(watch: "dict[str, int | None]") -> bool:
    for path, mtime in watch.items():
        try:
            if os.stat(path).st_mtime_ns != mtime:
                return False
        except OSError:
            if mtime is not None:
                return False
    return True


def mtimes(paths_: "Iterable[str]") -> "dict[str, int | None]":
    out: "dict[str, int | None]" = {}
    for path in paths_:
        try:
            out[path] = os.stat(path).st_mtime_ns
        except OSError:
            out[path] = None
    return out


def store(path: str, entries: dict, key: object, entry: object) -> None:
    """Add one entry (dropping the oldest beyond MAX_ENTRIES) and write atomically; never raises."""
    from cudaswitch.paths import atomic_write
    from cudaswitch.safeio import seal

    entries = dict(entries)
    entries.pop(key, None)
    entries[key] = entry
    while len(entries) > MAX_ENTRIES:
        entries.pop(next(iter(entries)))
    try:
        atomic_write(path, seal(marshal.dumps({"format": FORMAT, "entries": entries})))
    except (OSError, ValueError):
        pass  # a read-only cache dir costs a probe next time, not correctness


def load_table(path: str) -> dict:
    """A small sealed {key: value} cache (build results, compiler versions); {} when absent or bad."""
    from cudaswitch.safeio import load_marshal

    data = load_marshal(path, 16 << 20)
    return data if isinstance(data, dict) else {}


def store_table(path: str, table: dict, max_entries: int) -> None:
    """Write `table` sealed and atomically, keeping its newest `max_entries`; never raises."""
    from cudaswitch.paths import atomic_write
    from cudaswitch.safeio import seal

    if len(table) > max_entries:
        table = dict(list(table.items())[-max_entries:])
    try:
        atomic_write(path, seal(marshal.dumps(table)))
    except (OSError, ValueError):
        pass  # an unwritable cache costs the work again next time, not correctness
