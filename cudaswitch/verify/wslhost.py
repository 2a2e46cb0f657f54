"""WSL, read under the root prefix: /proc/version naming Microsoft or WSL, /usr/lib/wsl/lib (the Windows
driver's libcuda) and /dev/dxg (WSL 2's GPU device). A Linux driver installed inside WSL 2 puts its
own libcuda on the loader path and breaks CUDA; WSL 1 has no GPU. WSL's release is a Windows one, so
no Linux minimum applies (driver.py judges by the CUDA version libcuda reports)."""

import glob
import os

from cudaswitch.safeio import read_or_none
from cudaswitch.verify import loaderdirs
from cudaswitch.verify.driver import WSL_LIB
from cudaswitch.verify.checkregistry import Ask, registered
from cudaswitch.verify.compat import check

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from cudaswitch.paths import Paths
    from cudaswitch.verify.host import Host

DPKG_LISTS = ("*nvidia*.list", "*cuda-drivers*.list")


@registered("driver.wsl", layer="driver", shown_by=("doctor", "verify", "explain"))
def wsl_driver(host: "Host", ask: Ask) -> list:
    """Under WSL: WSL 1 (no GPU), no Windows libcuda, or a Linux driver's libcuda the loader may take instead."""
    version = host.driver.get("wsl") or None
    if not version:
        return [check("driver.wsl", "info", "not WSL: no Microsoft kernel in /proc/version, no %s, no /dev/dxg"
                      % WSL_LIB, None, wsl=None)] if ask.unchecked else []
    if version == 1:
        return [check("driver.wsl", "error", "WSL 1 has no GPU: CUDA runs only under WSL 2", "in Windows: `wsl "
                      "--set-version <distribution> 2` (and a current NVIDIA Windows driver)", wsl=1)]
    windows = os.path.join(WSL_LIB, "libcuda.so.1")
    linux = linux_libcuda(host)
    facts = {"wsl": 2, "libcuda": windows, "linux_libcuda": [f["path"] for f in linux]}
    if linux:
        named = "; ".join("%s%s" % (f["path"], " (package %s)" % f["package"] if f["package"] else "") for f in linux)
        packages = sorted({f["package"] for f in linux if f["package"]})
        remove = "`sudo apt-get purge %s`" % " ".join(packages) if packages else "delete %s" % ", ".join(
            f["path"] for f in linux)
        return [check("driver.wsl", "error", "a Linux driver's libcuda is installed inside WSL and shadows the "
                      "Windows driver's %s: %s" % (windows, named), "%s, then `sudo ldconfig`; inside WSL install only "
                      "the cuda-toolkit-X-Y package, never `cuda` or `cuda-drivers`" % remove, **facts)]
    if not os.path.exists(host.paths.host(windows)):
        return [check("driver.wsl", "error", "WSL 2 without %s: the Windows driver does not serve CUDA here" % windows,
                      "install or update the NVIDIA driver on Windows (nothing to install inside WSL), then `wsl "
                      "--shutdown`", **facts)]
    cuda = host.driver.get("cuda")
    return [check("driver.wsl", "ok", "WSL 2: the Windows driver%s serves %s (CUDA %s as libcuda reports); no Linux "
                  "driver inside" % (" " + host.driver["windows_release"] if host.driver.get("windows_release")
                                     else "", windows, cuda or "unknown"), None, **facts)]


def linux_libcuda(host: "Host") -> list:
    """[{"path", "package"}] of libcuda.so* on the loader path outside WSL's own directories."""
    dirs = loaderdirs.library_path(host.env, host.paths) + loaderdirs.system_dirs(host.paths)
    wsl = host.paths.host("/usr/lib/wsl")
    found: dict = {}  # the files, in the loader's order, once each
    seen: set = set()
    for directory in dirs:
        real = os.path.realpath(directory)  # /lib -> usr/lib on merged-/usr systems: one directory
        if real in seen or directory.startswith(wsl + "/") or os.path.basename(directory.rstrip("/")) == "stubs":
            continue
        seen.add(real)
        found.update(dict.fromkeys(host.paths.unhost(p) for p in loaderdirs.files_named(directory, "libcuda.so*")))
    owners = _dpkg_owners(host.paths, set(found)) if found else {}
    return [{"path": name, "package": owners.get(name)} for name in found]


def _dpkg_owners(paths: "Paths", wanted: set) -> dict:
    """{file: Debian package} from dpkg's file lists under the root prefix (driver packages only)."""
    info = glob.escape(paths.host("/var/lib/dpkg/info"))
    owners: dict = {}
    for listing in sorted({p for pattern in DPKG_LISTS for p in glob.glob(os.path.join(info, pattern))}):
        for line in (read_or_none(listing, 1 << 20) or b"").decode("utf-8", "replace").splitlines():
            if line in wanted:
                owners.setdefault(line, os.path.basename(listing)[:-len(".list")].split(":")[0])
    return owners
