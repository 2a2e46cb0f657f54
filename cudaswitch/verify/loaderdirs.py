"""Where the dynamic loader looks for a library: LD_PRELOAD, LD_LIBRARY_PATH, /etc/ld.so.conf's
directories and the defaults, the last two read under the root prefix so a test root or an image
answers like a host. Under a prefix an environment entry not already inside it is read there; the
ld.so.cache (`ldconfig -p`) is asked only on the real root (a prefix's would be another machine's)."""

import glob
import os
import re

from cudaswitch.pathsearch import which
from cudaswitch.safeio import read_or_none
from cudaswitch.verify.runner import run_bounded

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from cudaswitch.paths import Paths

# glibc's trusted directories plus the Debian/Ubuntu multiarch ones most drivers install into.
DEFAULT_DIRS = ("/lib", "/usr/lib", "/lib64", "/usr/lib64", "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
                "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu")
CONF_LIMIT = 64 * 1024  # an ld.so.conf is a few lines; a bigger one is not one
CONF_FILES = 64  # include globs over /etc/ld.so.conf.d: a handful on real hosts


def env_path(paths: "Paths", value: str) -> str:
    """A path from an environment variable, seen through the root prefix."""
    return paths.host(value) if paths.root != "/" and not value.startswith(paths.root + "/") else value


def library_path(env: dict, paths: "Paths") -> list:
    """LD_LIBRARY_PATH's absolute entries, in order (an empty or relative one names the working
    directory, which no check reads on a message's behalf)."""
    return [env_path(paths, d) for d in (env.get("LD_LIBRARY_PATH") or "").split(os.pathsep) if d.startswith("/")]


def preloads(env: dict, paths: "Paths") -> list:
    """LD_PRELOAD's absolute entries: ld.so splits the list on spaces and colons."""
    return [env_path(paths, p) for p in re.split(r"[\s:]+", env.get("LD_PRELOAD") or "") if p.startswith("/")]


def conf_dirs(paths: "Paths") -> list:
    """Directories /etc/ld.so.conf names (following its `include` globs once), as host paths."""
    out: list = []
    seen: set = set()
    pending = [paths.host("/etc/ld.so.conf")]
    while pending and len(seen) < CONF_FILES:
        conf = pending.pop(0)
        if conf in seen:
            continue
        seen.add(conf)
        text = (read_or_none(conf, CONF_LIMIT) or b"").decode("utf-8", "replace")
        for line in text.splitlines():
            line = line.split("#", 1)[0].strip()
            if line.startswith("include "):
                pattern = line.split(None, 1)[1].strip()
                pattern = pattern if pattern.startswith("/") else os.path.join(os.path.dirname(paths.unhost(conf)),
                                                                                 pattern)
                pending += sorted(glob.glob(paths.host(pattern)))
            elif line.startswith("/") and paths.host(line) not in out:
                out.append(paths.host(line))
    return out


def system_dirs(paths: "Paths") -> list:
    """The directories the loader searches after LD_LIBRARY_PATH and RUNPATH, as host paths."""
    out = conf_dirs(paths)
    return out + [paths.host(d) for d in DEFAULT_DIRS if paths.host(d) not in out]


def files_named(directory: str, pattern: str) -> list:
    """Files in `directory` matching a glob pattern, sorted; none for a missing directory."""
    return sorted(glob.glob(os.path.join(glob.escape(directory), pattern)))


def ldconfig_has(name: str, env: dict) -> "bool | None":
    """Is `name` in the loader cache (`ldconfig -p`)? None when ldconfig cannot say."""
    ldconfig = which("ldconfig", env) or "/sbin/ldconfig"  # a user's PATH often lacks /sbin
    code, out, _ = run_bounded([ldconfig, "-p"], env, 10.0)
    if code != 0:
        return None
    return (" " + name + " ").encode() in out or (name + " (").encode() in out


def file_version(path: str, stem: str) -> "str | None":
    """'2.18.3' from the real file a soname leads to (libnccl.so.2 -> libnccl.so.2.18.3), else from
    a sibling of the same stem (a copied, not linked, soname); None where no name carries one."""
    real = _version_in(os.path.basename(os.path.realpath(path)), stem)
    if real:
        return real
    siblings = [_version_in(os.path.basename(p), stem) for p in files_named(os.path.dirname(path), stem + ".so.*")]
    full = [v for v in siblings if v]
    return max(full, key=lambda v: [int(p) for p in v.split(".")]) if full else None


def _version_in(name: str, stem: str) -> "str | None":
    tail = name[len(stem) + len(".so."):] if name.startswith(stem + ".so.") else ""
    return tail if re.fullmatch(r"\d+(\.\d+){1,3}", tail) else None
