"""`verify` (every check of one toolkit, in the environment the user will have after switching to
it) and `doctor` (the host bottom up, each check carrying its registry layer): one report shape."""

from cudaswitch.switch.lookup import Lookup
from cudaswitch.verify import checkset
from cudaswitch.verify.host import Host

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from cudaswitch.paths import Paths


def verify_toolkit(paths: "Paths", registry: dict, record: dict, env: dict, python: "str | None" = None,
                   smoke_compile: bool = False, timeout: "float | None" = None,
                   current_env: "dict | None" = None) -> dict:
    """{"toolkit", "checks", "driver", "torch"} for `record`. `env`: after switching; `current_env`: the
    caller's own (is it already active?). The build is cached unless `smoke_compile`."""
    host = Host(paths, registry, env, record, python=python, timeout=timeout, fresh_build=smoke_compile)
    public = Lookup(registry, current_env or {}).public(record)
    return {"toolkit": public, "checks": checkset.run(host, "verify"), "driver": host.driver, "torch": host.torch}


def doctor(paths: "Paths", registry: dict, env: dict, python: "str | None" = None,
           timeout: "float | None" = None, collective: bool = False) -> dict:
    """As verify_toolkit's, for the active (else default) toolkit or None."""
    host = Host(paths, registry, env, python=python, timeout=timeout, collective=collective)
    checks = checkset.run(host, "doctor")
    public = Lookup(registry, env).public(host.record) if host.record else None
    return {"toolkit": public, "checks": checks, "driver": host.driver, "torch": host.torch}
