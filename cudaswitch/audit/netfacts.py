"""What a multi-node job needs the same on every node besides toolkits: the NCCL copies the loader
or a Python env would give a process (path and version) and each network interface's MTU and
state (/sys/class/net). Read under the root prefix, nothing run; `audit` reports them and `audit
merge` names the NCCL versions and MTUs that differ between nodes."""

import os

from cudaswitch.safeio import read_or_none
from cudaswitch.verify import loaderdirs

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cudaswitch.paths import Paths

MAX_INTERFACES = 256
# Interfaces NCCL does not bootstrap over by default, and the host-local bridges of containers/VMs:
# their MTU differing between nodes breaks no job.
LOCAL_PREFIXES = ("lo", "docker", "veth", "virbr", "br-", "cni", "flannel", "cali")


def nccl_copies(paths: "Paths", env: dict) -> list:
    """[{"path", "version"}] of each distinct libnccl on the loader path (LD_LIBRARY_PATH,
    ld.so.conf, the default dirs) and in the active env's nvidia-nccl wheel."""
    dirs = loaderdirs.library_path(env, paths) + loaderdirs.system_dirs(paths)
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        if env.get(var, "").startswith("/"):
            prefix = loaderdirs.env_path(paths, env[var])
            dirs += loaderdirs.files_named(os.path.join(prefix, "lib"), "python3*/site-packages/nvidia/nccl/lib")
    out, seen = [], set()
    for directory in dirs:
        for path in loaderdirs.files_named(directory, "libnccl.so*"):
            real = os.path.realpath(path)
            if real not in seen and os.path.isfile(real):
                seen.add(real)
                out.append({"path": paths.unhost(path), "version": loaderdirs.file_version(path, "libnccl")})
    return out


def interfaces(paths: "Paths") -> list:
    """[{"name", "mtu", "state"}] from /sys/class/net; [] where it cannot be read (an image)."""
    net = paths.host("/sys/class/net")
    try:
        names = sorted(os.listdir(net))[:MAX_INTERFACES]
    except OSError:
        return []
    return [{"name": name, "mtu": _number(os.path.join(net, name, "mtu")),
             "state": _text(os.path.join(net, name, "operstate"))} for name in names]


def job_mtus(found: list) -> tuple:
    """((name, mtu), ...) of the interfaces that are up and may carry a job's traffic."""
    return tuple(sorted((i["name"], i["mtu"]) for i in found if isinstance(i, dict) and i.get("state") == "up"
                        and isinstance(i.get("name"), str) and not i["name"].startswith(LOCAL_PREFIXES)))


def _text(path: str) -> "str | None":
    text = (read_or_none(path, 256) or b"").decode("utf-8", "replace").strip()
    return text if text and text.isprintable() else None


def _number(path: str) -> "int | None":
    text = _text(path)
    return int(text) if text and text.isdigit() and len(text) < 8 else None
