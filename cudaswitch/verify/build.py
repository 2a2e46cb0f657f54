"""A real build with a toolkit (`nvcc -c` and a link of a one-kernel program, run where a GPU is),
done once per toolkit identity and remembered, so "verified with nvcc" is literally true and a
later switch costs no process. A build that did not finish in time is not remembered: it says
nothing about the toolkit."""

from cudaswitch import cache
from cudaswitch.verify import nvcc
from cudaswitch.verify.identity import cudaswitch_version, driver_identity, toolkit_identity

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from cudaswitch.paths import Paths
    from cudaswitch.toolkit import AnyRecord, Env

BUILDS_FILE = "builds.marshal"
BUILD_TIMEOUT = 120.0
MAX_ENTRIES = 32


def cached_build(paths: "Paths", record: "AnyRecord", env: "Env", run: bool, fresh: bool = False,
                 timeout: float = BUILD_TIMEOUT, gpus: "Sequence[object]" = ()) -> dict:
    """nvcc.compile_smoke's result plus "cached": True when it came from an earlier build. A build
    that ran the program is also keyed by the driver and the GPUs it ran on: after a driver upgrade
    the old "fails on the GPU" says nothing."""
    ran_on = (driver_identity(paths, env), tuple(sorted(repr(g) for g in gpus))) if run else None
    key = repr((cudaswitch_version(), record["root"], toolkit_identity(record, env), bool(run), ran_on))
    known = cache.table(paths.cache_dir, BUILDS_FILE)
    if not fresh and key in known:
        return dict(known[key], cached=True)
    result = nvcc.compile_smoke(record, env, run=run, timeout=timeout)
    if not result.get("timed_out"):
        known.pop(key, None)
        known[key] = result
        cache.store_table(paths.cache_dir, BUILDS_FILE, known, MAX_ENTRIES)
    return dict(result, cached=False)


