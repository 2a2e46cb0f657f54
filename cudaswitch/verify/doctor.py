"""`doctor`: the layered diagnosis of this host, bottom up. Each check carries its `layer` from the
check registry (verify/checkregistry.py): hardware, driver, toolkit, compiler (the host compiler),
framework, deps (project dependencies), env (environment hygiene). The set is the registry's
`doctor` set (verify/checkset.py); the checks only doctor shows live in verify/hostchecks.py."""

from cudaswitch.switch.lookup import Lookup
from cudaswitch.verify import checkset
from cudaswitch.verify.host import Host

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from cudaswitch.paths import Paths


def doctor(paths: "Paths", registry: dict, env: dict, python: "str | None" = None,
           timeout: "float | None" = None, collective: bool = False) -> dict:
    """{"toolkit": list-shape | None, "checks": [...], "driver": {...}, "torch": {...}}."""
    host = Host(paths, registry, env, python=python, timeout=timeout, collective=collective)
    checks = checkset.run(host, "doctor")
    record = host.record
    public = Lookup(registry, env).public(record) if record else None
    return {"toolkit": public, "checks": checks, "driver": host.driver, "torch": host.torch}
