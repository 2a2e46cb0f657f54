"""Run by the USER's Python (any 3.x, stdlib only: nothing here may import cudaswitch) as `python -c
<this source> MARKER`: what its torch really is. Prints `MARKER<json>MARKER` last, so whatever else
is printed is ignored; every step is guarded: a broken torch is a finding, not a crash."""

import json
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

LIB_PREFIXES = ("libcudart", "libcudnn", "libnccl", "libcuda.so", "libcublas", "libnvrtc", "libnvJitLink",
                "libcusparse", "libcufft", "libcurand", "libcusolver", "libcufile", "libnvshmem")


def mapped_libraries() -> "dict[str, list[str]] | None":
    """{"libcudart": [paths], ...}: the CUDA libraries this process actually mapped."""
    found: "dict[str, list[str]]" = {}
    try:
        with open("/proc/self/maps") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split(None, 5)  # address perms offset dev inode [path]
        path = fields[5] if len(fields) == 6 else ""
        base = os.path.basename(path)
        for prefix in LIB_PREFIXES:
            if base.startswith(prefix) and ".so" in base:
                key = prefix.split(".")[0]
                if path not in found.setdefault(key, []):
                    found[key].append(path)
    return found


def guarded(out: dict, key: str, func: "Callable[[], object]") -> None:
    try:
        out[key] = func()
    except Exception as exc:  # torch raises many kinds here; each is a fact to report
        out[key] = None
        out.setdefault("errors", {})[key] = "%s: %s" % (type(exc).__name__,
                                                        str(exc).splitlines()[0] if str(exc) else "")


def devices(torch: "Any") -> "list[dict]":
    return [{"index": index, "name": torch.cuda.get_device_name(index),
             "capability": "%d.%d" % tuple(torch.cuda.get_device_capability(index))}
            for index in range(torch.cuda.device_count())]


def matmul(torch: "Any") -> dict:
    """A tiny matmul on the GPU: launches a real kernel, so 'no kernel image' shows up here."""
    a = torch.ones(16, 16, device="cuda")
    value = float((a @ a).sum().item())
    torch.cuda.synchronize()
    return {"ok": value == 16.0 * 16 * 16, "value": value}


def installed_distributions() -> "list[dict] | None":
    """Names of torch and NVIDIA wheels, with the tool that installed them (pip, conda, uv...)."""
    try:
        from importlib import metadata
    except ImportError:
        return None
    out = []
    for dist in metadata.distributions():
        name = (dist.metadata.get("Name") or "").lower()  # type: ignore[attr-defined]
        if name in ("torch", "pytorch") or name.startswith("nvidia-"):
            installer = (dist.read_text("INSTALLER") or "").strip() or None
            out.append({"name": name, "version": dist.version, "installer": installer})
    return out


def conda_torch() -> "list[str] | None":
    """The conda-meta record of pytorch in this prefix, if conda also installed it."""
    meta = os.path.join(sys.prefix, "conda-meta")
    try:
        names = os.listdir(meta)
    except OSError:
        return None
    return sorted(n for n in names if n.startswith(("pytorch-", "torch-")) and n.endswith(".json")) or None


def torch_spec_dir() -> "str | None":
    """torch's package directory found without importing it."""
    import importlib.util

    spec = importlib.util.find_spec("torch")
    locations = list(spec.submodule_search_locations or []) if spec else []
    return locations[0] if locations else None


def probe() -> dict:
    # site_dirs: the sys.path dirs that exist, which the caller watches to know when to probe again
    out: dict = {"python": sys.executable, "python_version": "%d.%d.%d" % sys.version_info[:3], "prefix": sys.prefix,
                 "site_dirs": [p for p in sys.path if p and os.path.isdir(p)], "torch": None}
    guarded(out, "distributions", installed_distributions)
    guarded(out, "conda_torch", conda_torch)
    try:
        import torch
    except Exception as exc:
        out["torch_error"] = "%s: %s" % ("ImportError" if isinstance(exc, ImportError) else type(exc).__name__, exc)
        guarded(out, "torch_spec_dir", torch_spec_dir)  # where it is, for the loader's view of a failed import
        return out
    # A directory named torch (a source checkout in the cwd) imports as an empty namespace
    # package: no __version__, no torch.cuda. That is a finding, not a crash.
    if not hasattr(torch, "__version__") or not hasattr(torch, "cuda"):
        out["torch_error"] = "%r is not an installed torch (a directory named torch on sys.path?)" % (torch,)
        return out
    out["torch"] = str(torch.__version__)
    out["torch_dir"] = os.path.dirname(getattr(torch, "__file__", None) or "") or None
    version = getattr(torch, "version", None)
    out["cuda"] = getattr(version, "cuda", None)
    out["hip"] = getattr(version, "hip", None)
    guarded(out, "arch_list", torch.cuda.get_arch_list)
    # The build's own list: get_arch_list() is [] whenever CUDA cannot start (old driver, no GPU
    # visible), yet the GPU still needs one of these architectures once it does.
    guarded(out, "arch_flags", lambda: torch._C._cuda_getArchFlags() if out["cuda"] else None)
    guarded(out, "available", torch.cuda.is_available)
    guarded(out, "devices", lambda: devices(torch) if out.get("available") else [])
    guarded(out, "cudnn", lambda: torch.backends.cudnn.version() if out["cuda"] else None)
    guarded(out, "nccl", lambda: ".".join(map(str, torch.cuda.nccl.version())) if out.get("available") else None)
    guarded(out, "nccl_available", lambda: torch.distributed.is_available() and
            torch.distributed.is_nccl_available())
    if out.get("available") and os.environ.get("CUDASWITCH_PROBE_MATMUL", "1") != "0":
        guarded(out, "matmul", lambda: matmul(torch))
    return out


def main() -> None:
    marker = sys.argv[1] if len(sys.argv) > 1 else "@@CUDASWITCH@@"
    log = os.environ.get("CUDASWITCH_PROBE_LOG")
    if log:  # tests count probe runs through this file (a repeated `use` must start none)
        with open(log, "a") as handle:
            handle.write("torch_probe %d\n" % os.getpid())
    try:
        result = probe()
    except BaseException as exc:  # even SystemExit from a hostile import: report it
        result = {"fatal": "%s: %s" % (type(exc).__name__, exc)}
    result["maps"] = mapped_libraries()
    # default=str: a value torch returns in a new type is still a report; ASCII JSON on fd 1
    # directly, because an import may have replaced or re-encoded sys.stdout.
    line = "\n" + marker + json.dumps(result, default=str) + marker + "\n"
    for stream in (sys.stdout, sys.__stdout__):
        try:
            stream.flush()  # type: ignore[union-attr]
        except Exception:
            pass
    os.write(1, line.encode("ascii"))


main()
