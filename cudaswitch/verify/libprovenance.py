"""Which file the dynamic loader gives the user's torch for each CUDA library it needs, and why, in
ld.so's own order ($ORIGIN expanded), with its version and the one torch's metadata pins. Today's
torch wheels carry DT_RPATH, which outranks LD_LIBRARY_PATH: a copy there is no finding, one in
LD_PRELOAD is. Where torch imported, its /proc/self/maps is what really loaded: a prediction that
disagrees is this module's bug. Dynamic sections are read from a few headers, never the whole
(often 500 MB) file, of 64-bit little-endian objects only (every host CUDA runs on); else None."""

import glob
import os
import re
import struct

from cudaswitch.safeio import read_or_none
from cudaswitch.verify import loaderdirs
from cudaswitch.verify.checkregistry import Ask, registered
from cudaswitch.verify.compat import check

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from typing import BinaryIO

    from cudaswitch.paths import Paths
    from cudaswitch.verify.checkregistry import CheckResult
    from cudaswitch.verify.host import Host

CUDA_SONAME = re.compile(r"^lib(cudart|cublas|cublasLt|cudnn\w*|nccl|nvrtc|nvJitLink|cusparse|cusparseLt|cufft|"
                         r"curand|cusolver|cufile|nvshmem_host)\.so\.[\d.]+$")
# torch/__init__.py names the wheel libraries it loads by full path: ("cublas", "libcublas.so.*[0-9]"),
# after its libtorch_global_deps loaded, when the maps hold the gate's text (a libcudart path)
TORCH_PRELOAD = re.compile(r'\("(\w+)", "(lib[\w-]+)\.so\.\*\[0-9\]"\)')
PRELOAD_GATE = re.compile(r'if "([^"]+)" not in _maps')
PRELOAD_ALL = re.compile(r"_preload_cuda_deps\((required=False)?\)")
BLOCK_END = re.compile(r"\n\s*except\b")
TORCH_CUDA = re.compile(r"^cuda(?:: [\w\[\]]+)? = '(\d+)\.", re.M)  # torch/version.py: cuda = '13.0'
MAX_LIBRARIES = 64  # torch needs about twenty; a loop in DT_NEEDED must not run on
DT_NEEDED, DT_STRTAB, DT_SONAME, DT_RPATH, DT_RUNPATH = 1, 5, 14, 15, 29
PT_LOAD, PT_DYNAMIC = 1, 2
MAX_DYNAMIC = 64 * 1024  # a dynamic section is a few hundred entries
MAX_STRING = 4096


def dynamic(path: str) -> "dict | None":
    """{"needed", "soname", "rpath", "runpath"}, or None for what is not a readable 64-bit LE ELF object."""
    try:
        with open(path, "rb") as handle:
            header = handle.read(64)
            if header[:4] != b"\x7fELF" or header[4] != 2 or header[5] != 1:
                return None
            phoff, = struct.unpack_from("<Q", header, 32)
            phentsize, phnum = struct.unpack_from("<HH", header, 54)
            handle.seek(phoff)
            table = handle.read(phentsize * phnum)
            segments = [struct.unpack_from("<IIQQQQ", table, i * phentsize) for i in range(phnum)]
            return _entries(handle, segments)
    except (OSError, struct.error):
        return None


def _entries(handle: "BinaryIO", segments: list) -> dict:
    dyn = [s for s in segments if s[0] == PT_DYNAMIC]
    if not dyn:
        return {"needed": [], "soname": None, "rpath": [], "runpath": []}
    handle.seek(dyn[0][2])
    raw = handle.read(min(dyn[0][5], MAX_DYNAMIC))
    tags = [struct.unpack_from("<qQ", raw, i) for i in range(0, len(raw) - 15, 16)]
    strtab = next((value for tag, value in tags if tag == DT_STRTAB), None)
    # DT_STRTAB is an address: the PT_LOAD segment holding it says where that is in the file.
    load = [s for s in segments if s[0] == PT_LOAD and strtab is not None and s[3] <= strtab < s[3] + s[5]]
    base = load[0][2] + strtab - load[0][3] if load else None

    def text(offset: int) -> str:
        if base is None:
            return ""
        handle.seek(base + offset)
        return handle.read(MAX_STRING).split(b"\0", 1)[0].decode("utf-8", "replace")

    strings = {tag: [text(v) for t, v in tags if t == tag] for tag in (DT_NEEDED, DT_SONAME, DT_RPATH, DT_RUNPATH)}
    return {"needed": strings[DT_NEEDED], "soname": strings[DT_SONAME][0] if strings[DT_SONAME] else None,
            "rpath": [d for s in strings[DT_RPATH] for d in s.split(":") if d],
            "runpath": [d for s in strings[DT_RUNPATH] for d in s.split(":") if d]}


class Loader:
    """ld.so's search for one process: its environment, its executable and what is preloaded."""

    def __init__(self, env: dict, paths: "Paths", executable: "str | None") -> None:
        self.env, self.paths = env, paths
        self.preloaded = [(p, (dynamic(p) or {}).get("soname") or os.path.basename(p))
                          for p in loaderdirs.preloads(env, paths)]
        exe = dynamic(executable) if executable else None
        self.exe_rpath = _expand((exe or {}).get("rpath") or [], executable or "") if not (exe or {}).get(
            "runpath") else []
        self.system = loaderdirs.system_dirs(paths)

    def resolve(self, soname: str, requester: str, chain: list) -> "tuple[str | None, str]":
        """(the file `requester` gets for `soname`, why). `chain` holds the RPATHs of the objects
        that loaded `requester`, which glibc searches too when it has no DT_RUNPATH."""
        for path, name in self.preloaded:
            if name == soname:
                return path, "LD_PRELOAD"
        own = dynamic(requester) or {}
        runpath = _expand(own.get("runpath") or [], requester)
        order = [] if runpath else [(d, "DT_RPATH of %s" % os.path.basename(requester))
                                    for d in _expand(own.get("rpath") or [], requester)]
        order += [] if runpath else [(d, "DT_RPATH of a loading object") for d in chain] + [
            (d, "DT_RPATH of the executable") for d in self.exe_rpath]
        order += [(d, "LD_LIBRARY_PATH") for d in loaderdirs.library_path(self.env, self.paths)]
        order += [(d, "DT_RUNPATH of %s" % os.path.basename(requester)) for d in runpath]
        order += [(d, "ld.so.cache / default directory") for d in self.system]
        for directory, why in order:
            if os.path.isfile(os.path.join(directory, soname)):
                return os.path.join(directory, soname), why
        return None, "not found on the loader path"


def _expand(dirs: list, origin_file: str) -> list:
    origin = os.path.dirname(origin_file)
    return [os.path.normpath(re.sub(r"\$(\{ORIGIN\}|ORIGIN)", origin, d)) for d in dirs]


def libraries(loader: Loader, torch_dir: str) -> list:
    """Every CUDA library libtorch_cuda.so needs, directly or through another CUDA library (cuSPARSE
    needs nvJitLink; libcudnn opens its sub-libraries from its own directory)."""
    root = os.path.join(torch_dir, "lib", "libtorch_cuda.so")
    root_rpath = _expand((dynamic(root) or {}).get("rpath") or [], root)
    pending = [(n, root) for n in (dynamic(root) or {}).get("needed") or []]
    cudart = next((loader.resolve(n, root, [])[0] for n, _ in pending if n.startswith("libcudart.so.")), None)
    preloads = torch_preloads(torch_dir, os.path.realpath(cudart) if cudart else "")  # as the maps show it
    out: list = []
    seen: set = set()
    while pending and len(out) < MAX_LIBRARIES:
        soname, requester = pending.pop(0)
        if soname in seen or not CUDA_SONAME.match(soname):
            continue
        seen.add(soname)
        chain = root_rpath if requester != root else []
        path, why = loader.resolve(soname, requester, chain)
        preloaded = preloads.get(soname.split(".so", 1)[0]) if why != "LD_PRELOAD" else None
        preloaded = preloaded if preloaded and os.path.basename(preloaded).startswith(soname) else None
        path, why = (preloaded, "already loaded: torch's __init__ loads its wheel's copy first") if preloaded else (
            path, why)
        # torch's own copy: the first of libtorch_cuda's own directories that holds one
        own = next((os.path.join(d, soname) for d in root_rpath if os.path.isfile(os.path.join(d, soname))), None)
        out.append({"soname": soname, "path": path, "why": why, "own": own, "needed_by": os.path.basename(requester)})
        if path:
            pending += [(n, path) for n in (dynamic(path) or {}).get("needed") or []]
            if soname.startswith("libcudnn.so."):
                pending += [(os.path.basename(p), path) for p in loaderdirs.files_named(os.path.dirname(path),
                                                                                          "libcudnn_*.so.*")]
    return out


def torch_preloads(torch_dir: str, cudart: str) -> "dict[str, str]":
    """{stem: wheel copy} of what torch/__init__.py loads by full path before libtorch, so that ld.so
    finds it already loaded whatever LD_LIBRARY_PATH says. Read from that file, as its release does
    it: torch 2.6-2.9 loads nvrtc and nvJitLink by name, 2.10-2.11 its whole list until one is
    missing, later releases every one present; each only when the maps hold the gate's text."""
    text = (read_or_none(os.path.join(torch_dir, "__init__.py"), 1 << 20) or b"").decode("utf-8", "replace")
    gate = PRELOAD_GATE.search(text)
    if not gate or gate.group(1) not in cudart:
        return {}
    end = BLOCK_END.search(text, gate.end())
    block = text[gate.end():end.start() if end else None]
    named, every = TORCH_PRELOAD.findall(block), PRELOAD_ALL.search(block)
    wanted = named or (TORCH_PRELOAD.findall(text[:gate.start()]) if every else [])
    required = bool(named) or (every is not None and every.group(1) is None)
    version = (read_or_none(os.path.join(torch_dir, "version.py"), 1 << 16) or b"").decode("utf-8", "replace")
    major = TORCH_CUDA.search(version)
    subs = ["nvidia/%s", "nvidia/cu" + major.group(1), "%s"] if major else ["nvidia/%s", "%s"]
    site, found = glob.escape(os.path.dirname(torch_dir)), {}
    for folder, stem in wanted:
        copies = [p for sub in subs for p in glob.glob(os.path.join(site, sub.replace("%s", folder), "lib",
                                                                    stem + ".so.*[0-9]"))]
        if not copies and required:
            break  # torch's loop raises at the first missing one and loads nothing more
        found.update({stem: copies[0]} if copies else {})
    return found


def wheel_versions(site: str) -> "tuple[dict, dict]":
    """({file under site-packages: (wheel, version)} of the NVIDIA wheels, {wheel: version torch pins})."""
    owners = {}
    for record in glob.glob(os.path.join(glob.escape(site), "nvidia_*.dist-info", "RECORD")):
        wheel, _, version = os.path.basename(os.path.dirname(record))[:-len(".dist-info")].partition("-")
        text = (read_or_none(record, 1 << 20) or b"").decode("utf-8", "replace")
        owners.update({line.split(",", 1)[0]: (_norm(wheel), version) for line in text.splitlines()})
    pins = {}
    for meta in glob.glob(os.path.join(glob.escape(site), "torch-*.dist-info", "METADATA")):
        text = (read_or_none(meta, 1 << 20) or b"").decode("utf-8", "replace")
        pins.update({_norm(m[0]): m[1] for m in re.findall(r"^Requires-Dist: *([\w.-]+) *==([\w.+]+)", text, re.M)})
    return owners, pins


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def version_of(path: "str | None", site: str, owners: dict) -> "tuple[str | None, str | None]":
    """(version, wheel): from the file's name (libcudnn.so.9.1.0), else from the wheel that installed it."""
    if not path:
        return None, None
    owner = owners.get(os.path.relpath(os.path.realpath(path), os.path.realpath(site)))
    named = loaderdirs.file_version(path, os.path.basename(path).split(".so", 1)[0])
    return (named or (owner[1] if owner else None)), (owner[0] if owner else None)


def torch_location(probe: dict) -> "str | None":
    """torch's directory: where it imported, else where the probe found it without importing."""
    return probe.get("torch_dir") or probe.get("torch_spec_dir")


def taken(env: dict, paths: "Paths", probe: dict) -> "dict | None":
    """{soname: the file the loader gives torch}, or None where torch has no libtorch_cuda.so to ask."""
    torch_dir = torch_location(probe)
    if not torch_dir or not os.path.isfile(os.path.join(torch_dir, "lib", "libtorch_cuda.so")):
        return None
    return {lib["soname"]: lib["path"] for lib in libraries(Loader(env, paths, probe.get("python")), torch_dir)}


@registered("libs.provenance", layer="framework", shown_by=("doctor", "verify", "explain"))
def provenance(host: "Host", ask: Ask) -> list:
    probe = host.torch
    torch_dir = torch_location(probe)
    if not torch_dir or not os.path.isfile(os.path.join(torch_dir, "lib", "libtorch_cuda.so")):
        why = "torch in %s has no CUDA libraries (%s)" % (host.python or "no python3", probe.get("torch") or probe.get(
            "torch_error") or probe.get("error") or "no torch") if torch_dir or probe.get("torch") else \
            "no torch was found in %s (%s)" % (host.python or "no python3", probe.get("torch_error") or probe.get(
                "error") or "not installed")
        return [check("libs.provenance", "info", "cannot check which CUDA libraries torch loads because " + why)]
    loader = Loader(host.env, host.paths, probe.get("python"))
    site = os.path.dirname(torch_dir)
    owners, pins = wheel_versions(site)
    mapped = [p for paths in (probe.get("maps") or {}).values() for p in paths]
    rows = [_row(lib, site, owners, pins, mapped) for lib in libraries(loader, torch_dir)]
    return [_verdict(rows, probe)]


def _row(lib: dict, site: str, owners: dict, pins: dict, mapped: list) -> dict:
    lib["version"], lib["wheel"] = version_of(lib["path"], site, owners)
    lib["own_version"], own_wheel = version_of(lib["own"], site, owners)
    lib["pinned"] = pins.get(own_wheel or "")
    lib["pinned_wheel"] = own_wheel if lib["pinned"] else None
    lib["mapped"] = next((p for p in mapped if os.path.basename(p) == lib["soname"]), None)
    return lib


def _verdict(rows: list, probe: dict) -> "CheckResult":
    imported = bool(probe.get("torch"))
    wrong = [r for r in rows if imported and r["mapped"] and r["path"] and
             os.path.realpath(r["mapped"]) != os.path.realpath(r["path"])]
    foreign = [r for r in rows if r["own"] and r["path"] and os.path.realpath(r["path"]) != os.path.realpath(r["own"])]
    unpinned = [r for r in rows if r["pinned"] and r["own_version"] and r["own_version"] != r["pinned"]]
    facts = {"libraries": rows, "imported": imported}
    if wrong:
        return check("libs.provenance", "error", "cudaswitch predicted %s, but the process mapped %s (a cudaswitch "
                     "bug: please report it)" % ("; ".join("%s from %s" % (r["soname"], r["path"]) for r in wrong),
                                                 ", ".join(r["mapped"] for r in wrong)), None, **facts)
    if foreign:
        text = "; ".join("%s loads %s (%s, version %s), not torch's own %s (%s)" % (
            r["soname"], r["path"], r["why"], r["version"] or "unknown", r["own"], r["own_version"] or "?")
            for r in foreign)
        return check("libs.provenance", "error", text + ("" if imported else "; torch does not import: %s"
                                                          % (probe.get("torch_error") or "?")),
                     "remove %s from %s; torch finds its own copies through its DT_RPATH" % (
                         ", ".join(r["path"] for r in foreign), " and ".join(sorted({r["why"] for r in foreign}))),
                     **facts)
    if unpinned:
        return check("libs.provenance", "warning", "; ".join("%s is %s (%s) but torch pins %s==%s" % (
            r["soname"], r["own_version"], r["own"], r["pinned_wheel"], r["pinned"]) for r in unpinned),
            "reinstall torch's wheels: pip install --force-reinstall torch", **facts)
    missing = [r["soname"] for r in rows if not r["path"]]
    level = "error" if missing else "ok"
    whys = sorted({r["why"] for r in rows if r["path"]})
    return check("libs.provenance", level, "%d CUDA libraries torch needs load from %s%s" % (
        len(rows), ", ".join(whys) or "nowhere", "; not found: " + ", ".join(missing) if missing else ""),
        "reinstall torch so its NVIDIA wheels come back" if missing else None, **facts)
