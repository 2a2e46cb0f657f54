"""The verdict `use` prints: one line, cached by everything it depends on. A cache hit imports nothing
beyond os, sys and marshal (the budgets in bench/ and tests/test_import_budget.py) and starts no
process; a miss runs usecheck's checks and stores the result."""

import os

from cudaswitch import cache
from cudaswitch.pathsearch import which
from cudaswitch.verify.identity import path_identity, cudaswitch_version, driver_identity, toolkit_identity

TYPE_CHECKING = False  # typing is not imported at run time (this module is on use's fast path)
if TYPE_CHECKING:
    from cudaswitch.paths import Paths

VERDICTS_FILE = "verdicts.marshal"
MAX_ENTRIES = 32
ENV_KEYS = ("LD_LIBRARY_PATH", "PYTHONPATH", "PYTHONHOME", "PYTHONNOUSERSITE", "PYTHONSAFEPATH",
            "NVCC_CCBIN", "CUDA_VISIBLE_DEVICES", "CUDASWITCH_LIBCUDA", "CUDASWITCH_ROOT")


def verdict_for_use(paths: "Paths", record: dict, new_env: dict, timeout: "float | None" = None) -> tuple:
    """(level, one_line) for switching to `record` with `new_env`; cached. timeout None: use's own."""
    key = (  # everything the verdict depends on that can be read without starting a process
        cudaswitch_version(), record["root"], record.get("version"), record.get("status"),
        toolkit_identity(record, new_env),
        path_identity(which("python3", new_env) or which("python", new_env)),
        path_identity(new_env.get("NVCC_CCBIN") or which("gcc", new_env)),
        driver_identity(paths, new_env),
        path_identity(os.path.join(paths.config_dir, "config.toml")),
        tuple(new_env.get(k) for k in ENV_KEYS),
    )
    entries = cache.table(paths.cache_dir, VERDICTS_FILE)
    hit = entries.get(key)
    if hit is None or not cache.watched_entry(hit, ("level", "line")) or not cache.unchanged(hit["watch"]):
        from cudaswitch.verify.usecheck import use_verdict

        level, line, watch = use_verdict(paths, record, new_env, timeout)
        hit = {"level": level, "line": line, "watch": cache.identities(watch)}
        entries.pop(key, None)
        entries[key] = hit
        cache.store_table(paths.cache_dir, VERDICTS_FILE, entries, MAX_ENTRIES)
    return hit["level"], hit["line"]


def verdict_to_show(paths: "Paths", record: dict, new_env: dict, strict: bool = False) -> tuple:
    """(level, line or None) as config's `verdict` setting asks: "all" lines, only "problems", or
    "off" (nothing verified, nothing said; --strict verifies all the same)."""
    from cudaswitch.config import switch_settings

    mode = switch_settings(paths)["verdict"]
    if mode == "off" and not strict:
        return "info", None
    level, line = verdict_for_use(paths, record, new_env, timeout=None)
    return level, (line if mode == "all" or level in ("warning", "error") else None)
