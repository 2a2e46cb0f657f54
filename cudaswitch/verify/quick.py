"""The verdict `use` prints: one line, cached by everything it depends on.

On a cache hit this module imports nothing beyond os, sys and marshal (no json, re, subprocess,
typing: see DESIGN.md budgets) and starts no process. On a miss it runs the checks of
cudaswitch.verify.usecheck (driver, host gcc, the torch probe) and stores the result.
"""

import os

from cudaswitch.verify import cache

ENV_KEYS = ("LD_LIBRARY_PATH", "PYTHONPATH", "PYTHONHOME", "PYTHONNOUSERSITE", "PYTHONSAFEPATH",
            "NVCC_CCBIN", "CUDA_VISIBLE_DEVICES", "CUDASWITCH_LIBCUDA", "CUDASWITCH_ROOT")


def which(name, env):
    """First executable `name` on env's PATH. Lives here, not in runner.py, because this module is
    import-light (the `use` cache hit) and runner imports json and subprocess; runner re-exports it."""
    for directory in (env.get("PATH") or "").split(":"):
        if not directory.startswith("/"):  # an empty or relative entry would find a repo's own tool
            continue
        candidate = os.path.join(directory, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def _identity(path):
    """(path, real path, mtime, size) of a file, or None: a rebuilt or replaced binary changes it."""
    if not path:
        return None
    try:
        real = os.path.realpath(path)
        st = os.stat(real)
    except OSError:
        return (path, None)
    return (path, real, st.st_mtime_ns, st.st_size)


def _driver_identity(paths, env):
    override = env.get("CUDASWITCH_LIBCUDA")
    if override:
        return ("override", _identity(override))
    from cudaswitch.safeio import read_or_none

    text = read_or_none(paths.host("/proc/driver/nvidia/version"), 4096)
    return ("proc", text, _identity(paths.host("/usr/lib/wsl/lib/libcuda.so.1")))


def dependency_key(paths, record, new_env):
    """Everything the verdict depends on that can be read without starting a process."""
    return (
        cache.FORMAT, record["root"], record.get("version"), record.get("status"),
        _identity(record.get("nvcc")),
        _identity(which("python3", new_env) or which("python", new_env)),
        _identity(new_env.get("NVCC_CCBIN") or which("gcc", new_env)),
        _driver_identity(paths, new_env),
        _identity(os.path.join(paths.config_dir, "config.toml")),
        tuple(new_env.get(k) for k in ENV_KEYS),
    )


def verdict_for_use(paths, record, new_env, timeout=20.0):
    """(level, one_line) for switching to `record` with environment `new_env`; cached."""
    key = dependency_key(paths, record, new_env)
    where = cache.cache_file(paths)
    entries = cache.load(where)
    hit = entries.get(key)
    if hit is not None and cache.unchanged(hit["watch"]):
        return hit["level"], hit["line"]
    from cudaswitch.verify.usecheck import use_verdict

    level, line, watch = use_verdict(paths, record, new_env, timeout)
    cache.store(where, entries, key, {"level": level, "line": line, "watch": cache.mtimes(watch)})
    return level, line
