"""NCCL as a layer of its own: its version (torch's, else the banner in the library file), the wheel
torch pins, other libnccl copies the loader would take first, torch.distributed's NCCL, NCCL_*
variables, the interfaces NCCL_SOCKET_IFNAME leaves and /dev/shm (host files under the root prefix).
`doctor --collective` runs two ranks of the user's torch on loopback, one all_reduce (NCCL with two
GPUs, else gloo) under a hard timeout, and names the layer that failed; an interface the user chose
(GLOO_SOCKET_IFNAME, NCCL_SOCKET_IFNAME) is kept, so the test answers for their settings."""

import mmap
import os
import re
import socket

from cudaswitch.verify import libprovenance, loaderdirs
from cudaswitch.verify.checkregistry import Ask, registered
from cudaswitch.verify.compat import check
from cudaswitch.verify.runner import run_script

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from cudaswitch.paths import Paths
    from cudaswitch.verify.host import Host

BANNER = re.compile(rb"NCCL version (\d+\.\d+\.\d+)(?:\+cuda(\d+\.\d+))?")
# NCCL's default NCCL_SOCKET_IFNAME is "^docker,lo": these prefixes are skipped unless named.
SKIPPED_BY_DEFAULT = ("docker", "lo")
WORLD = 2  # the collective test's ranks
INTERFACE = re.compile(r"Unable to find address for|SOCKET_IFNAME|no socket interface|interface", re.I)
LIBRARY = re.compile(r"undefined symbol|cannot open shared object|\blib\w+\.so", re.I)


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
def nccl_version(host: "Host", ask: Ask) -> list:
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


@registered("nccl.shm", layer="env", shown_by=("explain",))
def nccl_shm(host: "Host", ask: Ask) -> list:
    """What NCCL's "unhandled system error" often is in a container: a small /dev/shm."""
    try:
        st = os.statvfs("/dev/shm")
        shm = st.f_frsize * st.f_blocks
    except OSError:
        shm = None
    small = shm is not None and shm < 512 * 1024 * 1024
    text = "/dev/shm is %s" % ("%d MiB" % (shm // (1024 * 1024)) if shm is not None else "missing")
    return [check("nccl.shm", "warning" if small or shm is None else "ok", text + ("; too small for NCCL"
                  if small else ""), "docker run --shm-size=1g (or --ipc=host)" if small else None, shm_bytes=shm)]


@registered("nccl.interface", layer="env", shown_by=("explain",))
def nccl_interface(host: "Host", ask: Ask) -> list:
    """The interfaces NCCL may bootstrap over: the host's (/sys/class/net) filtered by
    NCCL_SOCKET_IFNAME as NCCL reads it (prefixes; `^` excludes; `=` exact names)."""
    spec = host.env.get("NCCL_SOCKET_IFNAME")
    hint = "run with NCCL_DEBUG=INFO (every rank) to see the interface NCCL picked and the failing call"
    net = host.paths.host("/sys/class/net")
    try:
        names = sorted(os.listdir(net))
    except OSError as exc:
        return [check("nccl.interface", "info", "cannot check network interfaces because %s cannot be read (%s); "
                      "NCCL_SOCKET_IFNAME is %s" % (net, exc.strerror, spec or "unset"), hint, ifname=spec)]
    usable = interface_matches(spec, names)
    facts = {"ifname": spec, "interfaces": names, "usable": usable}
    if not usable:
        said = "NCCL_SOCKET_IFNAME=%s matches" % spec if spec else "with NCCL_SOCKET_IFNAME unset NCCL finds"
        return [check("nccl.interface", "error", "%s no interface here (interfaces: %s)" % (said, ", ".join(names)
                      or "none"), "set NCCL_SOCKET_IFNAME to the interface that reaches the other nodes (`ip -br "
                      "addr`); " + hint, **facts)]
    return [check("nccl.interface", "ok", "NCCL may use %s here (NCCL_SOCKET_IFNAME %s; all interfaces: %s)"
                  % (", ".join(usable), spec or "unset", ", ".join(names)), hint, **facts)]


def interface_matches(spec: "str | None", names: list) -> list:
    """The interface names NCCL_SOCKET_IFNAME=`spec` selects among `names`."""
    if not spec:
        return [n for n in names if not n.startswith(SKIPPED_BY_DEFAULT)]
    exclude = spec.startswith("^")
    body = spec[1:] if exclude else spec
    exact = body.startswith("=")
    wanted = [w for w in (body[1:] if exact else body).split(",") if w]

    def hit(name: str) -> bool:
        return any(name == w if exact else name.startswith(w) for w in wanted)

    return [n for n in names if hit(n) != exclude]


@registered("nccl.foreign", layer="env", shown_by=("explain",))
def nccl_foreign(host: "Host", ask: Ask) -> list:
    """A libnccl on LD_PRELOAD or LD_LIBRARY_PATH, not torch's nvidia-nccl wheel copy, loaded before it."""
    own_dir, own_version = _torch_nccl(host.torch)
    own_real = os.path.realpath(own_dir) if own_dir else None
    found = []
    for where, path in _taken(host, _candidates(host.env, host.paths)):
        if own_real and os.path.realpath(os.path.dirname(path)) == own_real:
            continue
        found.append({"via": where, "path": path, "version": loaderdirs.file_version(path, "libnccl")})
    ours = "torch's own: %s" % ("nvidia-nccl %s in %s" % (own_version or "?", own_dir) if own_dir else
                                "not found (%s)" % (host.torch.get("torch") and "torch has no nvidia-nccl wheel"
                                                    or host.torch.get("torch_error") or host.torch.get("error")
                                                    or "no torch in %s" % host.python))
    facts = {"foreign": found, "torch_nccl": own_dir, "torch_nccl_version": own_version}
    if not found:
        return [check("nccl.foreign", "ok", "no libnccl on LD_PRELOAD or LD_LIBRARY_PATH that the loader would give "
                      "torch first; " + ours, None, **facts)]
    text = "; ".join("%s %s (%s)" % (f["via"], f["path"], f["version"] or "version not in its name") for f in found)
    return [check("nccl.foreign", "error", "a libnccl comes before torch's own: %s; %s" % (text, ours),
                  "use the NCCL PyTorch ships: %s" % _removal(found), **facts)]


def _candidates(env: dict, paths: "Paths") -> "list[tuple[str, str]]":
    """(how it is reached, path) of every libnccl the environment puts before torch's RUNPATH."""
    out = [("LD_PRELOAD", p) for p in loaderdirs.preloads(env, paths) if os.path.basename(p).startswith("libnccl.so")]
    for directory in loaderdirs.library_path(env, paths):
        out += [("LD_LIBRARY_PATH", p) for p in loaderdirs.files_named(directory, "libnccl.so*")[:1]]
    return out


def _taken(host: "Host", candidates: list) -> list:
    """The candidates the loader would give torch: a copy on LD_LIBRARY_PATH loses to torch's DT_RPATH."""
    torch_dir = libprovenance.torch_location(host.torch)
    lib = os.path.join(torch_dir or "", "lib", "libtorch_cuda.so")
    if not torch_dir or not os.path.isfile(lib):
        return candidates  # no torch to ask: every copy before its own may be taken
    taken, _ = libprovenance.Loader(host.env, host.paths, host.torch.get("python")).resolve("libnccl.so.2", lib, [])
    return [(where, path) for where, path in candidates
            if where != "LD_LIBRARY_PATH" or os.path.dirname(path) == os.path.dirname(taken or "")]


def _removal(found: "list[dict]") -> str:
    vias = sorted({f["via"] for f in found})
    parts = []
    if "LD_PRELOAD" in vias:
        parts.append("drop %s from LD_PRELOAD" % ", ".join(f["path"] for f in found if f["via"] == "LD_PRELOAD"))
    if "LD_LIBRARY_PATH" in vias:
        parts.append("drop %s from LD_LIBRARY_PATH for torch" % ", ".join(
            os.path.dirname(f["path"]) for f in found if f["via"] == "LD_LIBRARY_PATH"))
    return " and ".join(parts)


def _torch_nccl(probe: dict) -> "tuple[str | None, str | None]":
    """(site-packages/nvidia/nccl/lib, its wheel version) of the user's torch, or (None, None)."""
    torch_dir = libprovenance.torch_location(probe)
    if not torch_dir:
        return None, None
    lib = os.path.join(os.path.dirname(torch_dir), "nvidia", "nccl", "lib")
    versions = [d["version"] for d in probe.get("distributions") or [] if str(d.get("name", "")).startswith(
        "nvidia-nccl")]
    return (lib if os.path.isdir(lib) else None), (versions[0] if versions else None)


def run_ranks(python: str, env: dict, backend: str, timeout: float) -> list:
    """Each rank's report ({"rank", "stage", "error"?, "sum"?}), both run at once under `timeout` s."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    base = {**env, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "WORLD_SIZE": str(WORLD)}
    args = [backend, str(max(timeout / 2, 1.0))]  # the rendezvous gets half the time
    base.setdefault("GLOO_SOCKET_IFNAME", "lo")
    base.setdefault("NCCL_SOCKET_IFNAME", "lo")
    from concurrent.futures import ThreadPoolExecutor  # only for `doctor --collective`

    def rank(index: int) -> dict:
        payload, error = run_script(python, "collective_rank.py", args, {**base, "RANK": str(index)}, timeout)
        return payload or {"rank": index, "stage": None, "error": error}

    with ThreadPoolExecutor(WORLD) as pool:
        return list(pool.map(rank, range(WORLD)))


def failed_layer(report: dict) -> str:
    """The layer a rank's failure belongs to, from the stage it reached and its error."""
    error, stage = report.get("error") or "", report.get("stage")
    if stage == "import" or LIBRARY.search(error):
        return "library"
    if stage == "rendezvous" and INTERFACE.search(error):
        return "interface"
    return {"backend": "backend", "rendezvous": "rendezvous", "all_reduce": "backend"}.get(stage or "", "rendezvous")


@registered("collective.all_reduce", layer="framework", shown_by=("doctor",))
def all_reduce(host: "Host", ask: Ask) -> list:
    if not host.collective:
        return []  # asked for with `doctor --collective` only: it starts two torch processes
    if not host.python:
        return [check("collective.all_reduce", "info", "cannot run the collective test because no python3 was found")]
    gpus = len(host.torch.get("devices") or [])
    backend = "nccl" if gpus >= WORLD else "gloo"
    reports = run_ranks(host.python, host.env, backend, host.timeout)
    facts = {"backend": backend, "ranks": reports, "timeout_s": host.timeout}
    bad = [r for r in reports if r.get("stage") != "done" or r.get("sum") != float(WORLD)]
    said = "%d ranks of %s, %s on %s" % (WORLD, host.python, backend, "%d GPUs" % WORLD if gpus >= WORLD else "CPU")
    if not bad:
        return [check("collective.all_reduce", "ok", "all_reduce worked: " + said, None, **facts)]
    first = next((r for r in bad if r.get("error")), bad[0])
    layer = failed_layer(first)
    facts["layer"] = layer
    return [check("collective.all_reduce", "error", "all_reduce failed at the %s layer (%s): rank %s: %s" % (
        layer, said, first.get("rank"), first.get("error") or "sum %s, expected %d" % (first.get("sum"), WORLD)),
        HINTS[layer], **facts)]


HINTS = {"library": "`cudaswitch doctor` names the library torch loads from the wrong place",
         "backend": "run with NCCL_DEBUG=INFO (every rank) to see the failing call",
         "interface": "set GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME to an interface that exists (`ip -br addr`)",
         "rendezvous": "check MASTER_ADDR/MASTER_PORT reach rank 0 and no firewall blocks the port"}
