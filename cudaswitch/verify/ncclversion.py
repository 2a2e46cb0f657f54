"""NCCL as torch uses it: the version (torch.cuda.nccl.version() where torch started CUDA, else the
banner NCCL builds into its own library file), the wheel torch pins, every other libnccl on the
loader path, whether torch.distributed has NCCL, and the NCCL_* variables that steer it."""

import mmap
import os
import re

from cudaswitch.verify import libprovenance, loaderdirs
from cudaswitch.verify.checkregistry import Ask, registered
from cudaswitch.verify.compat import check

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from cudaswitch.verify.host import Host

PLAIN = Ask("explain")
BANNER = re.compile(rb"NCCL version (\d+\.\d+\.\d+)(?:\+cuda(\d+\.\d+))?")


def banner(path: str) -> "tuple[str | None, str | None]":
    """(version, CUDA it was built for) from the "NCCL version 2.30.7+cuda13.3" string in the library."""
    try:
        with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            found = BANNER.search(data)
            groups = [g.decode() if g else None for g in found.groups()] if found else [None, None]
    except (OSError, ValueError):
        return None, None
    return groups[0], groups[1]


def other_copies(host: "Host", used: "str | None") -> list:
    """Every libnccl.so.* on LD_PRELOAD, LD_LIBRARY_PATH and the system directories but the one in use."""
    dirs = loaderdirs.library_path(host.env, host.paths) + loaderdirs.system_dirs(host.paths)
    files = loaderdirs.preloads(host.env, host.paths) + [p for d in dirs for p in loaderdirs.files_named(
        d, "libnccl.so.*")]
    seen = {os.path.realpath(used)} if used else set()
    out = []
    for path in files:
        if os.path.basename(path).startswith("libnccl.so") and os.path.realpath(path) not in seen:
            seen.add(os.path.realpath(path))
            out.append(path)
    return out


@registered("nccl.version", layer="framework", shown_by=("doctor", "verify", "explain"))
def nccl_version(host: "Host", ask: Ask = PLAIN) -> list:
    probe = host.torch
    torch_dir = libprovenance.torch_location(probe)
    lib = os.path.join(torch_dir or "", "lib", "libtorch_cuda.so")
    if not torch_dir or not os.path.isfile(lib):
        return [check("nccl.version", "info", "cannot check torch's NCCL because %s" % (
            "torch in %s has no CUDA libraries" % host.python if torch_dir else "no torch was found in %s"
            % (host.python or "no python3")))] if ask.unchecked or torch_dir else []
    path, why = libprovenance.Loader(host.env, host.paths, probe.get("python")).resolve("libnccl.so.2", lib, [])
    _, pins = libprovenance.wheel_versions(os.path.dirname(torch_dir))
    wheel, pinned = next(((w, v) for w, v in pins.items() if w.startswith("nvidia-nccl")), (None, None))
    version, built_for = banner(path) if path else (None, None)
    source = "torch.cuda.nccl.version()" if probe.get("nccl") else "the library file"
    version = probe.get("nccl") or version
    facts: dict = {"path": path, "why": why, "version": version, "source": source, "cuda": built_for, "pinned": pinned,
             "pinned_wheel": wheel, "others": other_copies(host, path), "available": probe.get("nccl_available"),
             "variables": {k: v for k, v in sorted(host.env.items()) if k.startswith("NCCL_")}}
    said = "NCCL %s (%s%s) from %s (%s)" % (version or "of unknown version", source, ", built for CUDA %s"
                                           % built_for if built_for else "", path, why)
    tail = "; torch.distributed NCCL: %s; other copies: %s; NCCL_* set: %s" % (
        {True: "available", False: "not available"}.get(facts["available"], "not known (torch did not import)"),
        ", ".join(facts["others"]) or "none", ", ".join("%s=%s" % kv for kv in facts["variables"].items()) or "none")
    if not path:
        return [check("nccl.version", "error", "torch's libnccl.so.2 is not on the loader path" + tail,
                      "reinstall torch so its %s wheel comes back" % (wheel or "nvidia-nccl"), **facts)]
    if pinned and version != pinned:
        return [check("nccl.version", "warning", "%s, but torch pins %s==%s%s" % (said, wheel, pinned, tail),
                      "use the NCCL PyTorch ships: " + ("take %s off %s" % (path, why) if why in ("LD_PRELOAD",
                      "LD_LIBRARY_PATH") else "pip install --force-reinstall %s==%s" % (wheel, pinned)), **facts)]
    return [check("nccl.version", "ok", said + (", as torch pins" if pinned else "") + tail, None, **facts)]
