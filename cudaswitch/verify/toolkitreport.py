"""`verify`: every check of one toolkit against nvcc, the host gcc, the driver and the user's torch,
in the environment the user will have after switching to it."""

from cudaswitch.switch.lookup import Lookup
from cudaswitch.verify import checkset
from cudaswitch.verify.host import Host

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from cudaswitch.paths import Paths


def verify_toolkit(paths: "Paths", registry: dict, record: dict, env: dict, python: "str | None" = None,
                  smoke_compile: bool = False, timeout: "float | None" = None,
                  current_env: "dict | None" = None) -> dict:
    """{"toolkit": list-shape, "checks": [...], "driver": {...}, "torch": {...}} for `record`.

    `env` is the environment after switching (switch/plan.py, as `use` gives it); `current_env`, when given,
    is the caller's own environment (it says whether the toolkit is already active). The build is
    the cached one unless `smoke_compile` asks for a fresh one."""
    host = Host(paths, registry, env, record, python=python, timeout=timeout, fresh_build=smoke_compile)
    checks = checkset.run(host, "verify")
    public = Lookup(registry, current_env or {}).public(record)
    return {"toolkit": public, "checks": checks, "driver": host.driver, "torch": host.torch}


