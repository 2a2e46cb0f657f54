"""Lmod modules, asked through Lmod itself: one `spider -o spider-json` run lists every modulefile
with the directories it prepends to PATH (`pathA`) and LD_LIBRARY_PATH (`lpathA`).

Lmod evaluates the modulefiles (variables, pathJoin, conditionals), so nothing here guesses at Lua
or Tcl text. The registry cache watches the MODULEPATH dirs and each modulefile's mtime.
Environment Modules (`$MODULES_CMD`) is not asked yet: see the issue note.
"""

import json
import os
import subprocess

from cudaswitch.sources import Candidate

NAME = "module"
DESCRIPTION = "Lmod modules on $MODULEPATH"
PACKAGES = ("cuda", "cudatoolkit", "cuda-toolkit", "nvhpc-cuda")
LMOD_GUESSES = ("/usr/share/lmod/lmod/libexec", "/opt/apps/lmod/lmod/libexec", "/usr/share/lmod/lmod/libexec")


def find(scan):
    modulepath = scan.env.get("MODULEPATH", "")
    dirs = [d for d in modulepath.split(":") if d]
    spider = _spider_command(scan.env)
    if not dirs or spider is None:
        return
    for directory in dirs:
        for name in scan.listdir(directory):
            scan.watch(os.path.join(directory, name))
    for module, modulefile, root in _spider(spider, modulepath, scan.timeout):
        scan.watch(modulefile)
        yield Candidate(scan.env_path(root), NAME, module, hint_version=module.rpartition("/")[2])


def _spider_command(env):
    candidates = []
    if env.get("LMOD_DIR"):
        candidates.append(os.path.join(env["LMOD_DIR"], "spider"))
    if env.get("LMOD_CMD"):
        candidates.append(os.path.join(os.path.dirname(env["LMOD_CMD"]), "spider"))
    candidates += [os.path.join(d, "spider") for d in LMOD_GUESSES]
    return next((c for c in candidates if os.access(c, os.X_OK)), None)


def _spider(spider, modulepath, timeout):
    """(module name, modulefile, toolkit root) for each CUDA modulefile Lmod reports."""
    try:
        proc = subprocess.run(
            [spider, "-o", "spider-json", modulepath],
            capture_output=True, timeout=max(timeout, 10), stdin=subprocess.DEVNULL,
        )
        data = json.loads(proc.stdout or b"{}")
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return []
    found = []
    for package, entries in data.items() if isinstance(data, dict) else ():
        if package.lower() not in PACKAGES or not isinstance(entries, dict):
            continue
        for modulefile, info in entries.items():
            root = _root_of(info) if isinstance(info, dict) else None
            if root:
                found.append((info.get("fullName", package), modulefile, root))
    return found


def _root_of(info):
    """The toolkit root a modulefile points at: parent of the bin dir it prepends to PATH."""
    for directory in info.get("pathA") or {}:
        if os.path.basename(directory.rstrip("/")) == "bin":
            return os.path.dirname(directory.rstrip("/"))
    for directory in info.get("lpathA") or {}:
        if os.path.basename(directory.rstrip("/")) in ("lib64", "lib"):
            return os.path.dirname(directory.rstrip("/"))
    return None
