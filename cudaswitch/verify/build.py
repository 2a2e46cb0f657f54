"""A real build with a toolkit (`nvcc -c` and a link of a one-kernel program, run where a GPU is),
done once per toolkit identity and remembered, so "verified with nvcc" is literally true and a
later switch costs no process. A build that did not finish in time is not remembered: it says
nothing about the toolkit."""

import marshal
import os

from cudaswitch.verify import nvcc
from cudaswitch.verify.identity import toolkit_identity

BUILDS_FILE = "builds.marshal"
BUILD_TIMEOUT = 120.0
MAX_ENTRIES = 32


def cached_build(paths, record, env, run, fresh=False, timeout=BUILD_TIMEOUT):
    """nvcc.compile_smoke's result plus "cached": True when it came from an earlier build."""
    key = repr((record["root"], toolkit_identity(record, env), bool(run)))
    where = os.path.join(paths.cache_dir, BUILDS_FILE)
    known = _load(where)
    if not fresh and key in known:
        return dict(known[key], cached=True)
    result = nvcc.compile_smoke(record, env, run=run, timeout=timeout)
    if not result.get("timed_out"):
        known.pop(key, None)
        known[key] = result
        _store(where, known)
    return dict(result, cached=False)


def _load(where):
    try:
        with open(where, "rb") as handle:
            data = marshal.load(handle)
    except (OSError, ValueError, EOFError, TypeError):
        return {}
    return data if isinstance(data, dict) else {}


def _store(where, known):
    from cudaswitch.paths import atomic_write

    while len(known) > MAX_ENTRIES:
        known.pop(next(iter(known)))
    try:
        atomic_write(where, marshal.dumps(known))
    except (OSError, ValueError):
        pass  # an unwritable cache costs a build next time, not correctness
