"""`explain "TEXT"`: match an error message against the error rules of compat.toml, then run the
checks that confirm or rule out each cause on this host.

Messages are matched with whitespace folded and case ignored, against several wordings per rule
(torch rewords messages between releases and wraps them in tracebacks)."""

import os
import re

from cudaswitch.render import counted
from cudaswitch.toolkit import short_version, version_tuple
from cudaswitch.verify import driverlayer, facts as table, hostcc, pipeline
from cudaswitch.verify.checks import arch_in_build, compat_libcuda_dirs, compiled_archs
from cudaswitch.verify.compat import check, torch_home
from cudaswitch.verify.doctor import driver_checks
from cudaswitch.verify.host import Host
from cudaswitch.verify.runner import run_bounded, which

UNKNOWN = ("cudaswitch does not know this message: no rule in its compat.toml matches it "
           "(`cudaswitch doctor` checks this host in general)")


def match_rules(text):
    """[(rule, matched text)] in the order the messages appear in `text`."""
    folded = " ".join(text.split())
    hits = []
    for rule in table.error_rules():
        found = [m for m in (re.search(p, folded, re.IGNORECASE) for p in rule["patterns"]) if m]
        if found:
            first = min(found, key=lambda m: m.start())
            hits.append((first.start(), rule, first.group(0)))
    return [(rule, matched) for _, rule, matched in sorted(hits, key=lambda h: h[0])]


def explain(text, paths, registry, env, python=None, timeout=None):
    """{"known": bool, "matches": [{"id", "cause", "todo", "matched", "source", "checks"}], "message"}."""
    host = Host(paths, registry, env, python=python, timeout=timeout)
    matches = []
    for rule, matched in match_rules(text):
        checks = []
        for name in rule["checks"]:
            checks += CONFIRMERS[name](host, text)
        matches.append({"id": rule["id"], "cause": rule["cause"], "todo": rule["todo"], "matched": matched,
                        "source": rule["source"], "verified": rule.get("verified", True), "checks": checks})
    message = UNKNOWN if not matches else counted(len(matches), "known cause")
    return {"known": bool(matches), "matches": matches, "message": message}


def confirm_gpu_arch(host, text):
    out = []
    probe = host.torch
    archs = compiled_archs(probe)
    for device in host.gpus if archs else []:
        out.append(arch_in_build(device, archs, {"torch": probe.get("torch")}))
    for sm in sorted(set(re.findall(r"sm_(\d+a?)", text))):
        row = table.arch_row(sm)
        if row:
            out.append(check("explain.arch_table", "info", "sm_%s needs CUDA %s or newer%s" % (
                sm, row["first"], (", and was dropped after %s" % row["last"]) if row["last"] else ""), None,
                sm=sm, source=row["source"]))
    if not out:
        out.append(check("explain.gpu_arch", "info", "no GPU visible on this host: cannot compare its "
                         "architecture with torch's arch list here", "run `cudaswitch explain` on the GPU machine"))
    return out


def confirm_driver(host, text):
    out = driver_checks(host.driver)
    if host.driver["present"] and host.record:
        out += pipeline.driver_for_toolkit(host)
    return out


def confirm_torch_driver(host, text):
    # confirm_torch reports a CPU-only or missing torch; this one only the driver part
    return [c for c in pipeline.torch(host) if c["id"] == "torch.driver"]


def confirm_torch(host, text):
    return pipeline.torch(host)


def confirm_cuda_home(host, text):
    home, how = torch_home(host.env)
    if not home:
        return [check("env.cuda_home_major", "info", "cannot compare CUDA majors: torch would find no CUDA_HOME "
                      "here", None)]
    nvcc = os.path.join(home, "bin", "nvcc")
    from cudaswitch.registry.nvcc_probe import run_nvcc

    result = run_nvcc(nvcc, 15.0) if os.path.exists(nvcc) else {"error": "no bin/nvcc"}
    found = result.get("version")
    torch_cuda = host.torch.get("cuda")
    same = found and torch_cuda and version_tuple(found)[0] == version_tuple(torch_cuda)[0]
    level = "ok" if same else ("error" if found and torch_cuda else "info")
    probe = host.torch
    built = ("torch %s was built with CUDA %s" % (probe["torch"], torch_cuda) if torch_cuda else
             "torch %s is a CPU build" % probe["torch"] if probe.get("torch") else "this Python has no torch")
    return [check("env.cuda_home_major", level, "torch would take CUDA_HOME=%s (%s); its nvcc is %s; %s"
                  % (home, how, found or result.get("error"), built),
                  None if same else "`cudaswitch use %s`" % (short_version(torch_cuda) if torch_cuda else "VERSION"),
                  cuda_home=home, nvcc_version=found, torch_cuda=torch_cuda)]


def confirm_loader_path(host, text):
    wanted = re.search(r"(lib[A-Za-z_-]+\.so(?:\.[\d.]*\d)?)", text)
    name = wanted.group(1) if wanted else "libcudart.so"
    dirs = [d for d in (host.env.get("LD_LIBRARY_PATH") or "").split(":") if d]
    on_path = [d for d in dirs if os.path.exists(os.path.join(d, name))]
    cached = _ldconfig_has(name, host.env) if host.paths.root == "/" else None
    kits = [r["version"] for r in host.registry["records"]
            if any(os.path.exists(os.path.join(d, name)) for d in r.get("lib_dirs") or [])]
    wheels = _wheel_copies(host, name)
    found = bool(on_path or cached)
    return [check("env.loader_path", "ok" if found else "warning", "%s is %s (LD_LIBRARY_PATH: %s; ldconfig: %s); "
                  "toolkits that have it: %s; Python wheels that have it: %s" % (
                      name, "on the loader path" if found else "NOT on the loader path", ", ".join(on_path) or "no",
                      {True: "yes", False: "no", None: "not asked"}[cached], ", ".join(kits) or "none found",
                      ", ".join(wheels) or "none found"), None if found else (
                  "`cudaswitch use %s`" % short_version(kits[0]) if kits else
                  "put %s on LD_LIBRARY_PATH" % os.path.dirname(wheels[0]) if wheels else
                  "install the library (that CUDA major's runtime, or cuDNN of that major)"),
                  library=name, on_path=on_path, ldconfig=cached, toolkits=kits, wheels=wheels)]


def _wheel_copies(host, name):
    """Copies in the user's Python's NVIDIA wheels (site-packages/nvidia/*/lib), where torch's live."""
    import glob

    return sorted(p for d in host.torch.get("site_dirs") or [] if isinstance(d, str) and os.path.isabs(d)
                  for p in glob.glob(os.path.join(glob.escape(d), "nvidia", "*", "lib", glob.escape(name))))


def _ldconfig_has(name, env):
    """Is `name` in the loader cache (`ldconfig -p`)? None when ldconfig cannot say."""
    ldconfig = which("ldconfig", env) or "/sbin/ldconfig"  # a user's PATH often lacks /sbin
    code, out, _ = run_bounded([ldconfig, "-p"], env, 10.0)
    if code != 0:
        return None
    return (" " + name + " ").encode() in out or (name + " (").encode() in out


def confirm_cudnn(host, text):
    return pipeline.cudnn_copies(host)


def confirm_nccl(host, text):
    try:
        st = os.statvfs("/dev/shm")
        shm = st.f_frsize * st.f_blocks
    except OSError:
        shm = None
    small = shm is not None and shm < 512 * 1024 * 1024
    ifname = host.env.get("NCCL_SOCKET_IFNAME")
    text_ = "/dev/shm is %s" % ("%d MiB" % (shm // (1024 * 1024)) if shm is not None else "missing")
    return [check("nccl.shm", "warning" if small or shm is None else "ok", text_ + ("; too small for NCCL"
                  if small else ""), "docker run --shm-size=1g (or --ipc=host)" if small else None, shm_bytes=shm),
            check("nccl.interface", "info", "NCCL_SOCKET_IFNAME is %s" % (ifname or "unset (NCCL picks one)"),
                  "run with NCCL_DEBUG=INFO to see the failing call", ifname=ifname)]


def confirm_nvcc_arch(host, text):
    out = []
    archs = host.nvcc_archs
    for arch in sorted(set(re.findall(r"(?:compute|sm)_(\d+[a-z]?)", text))):
        row = table.arch_row(arch)
        known = "compute_" + arch.rstrip("af") in (archs or [])
        span = "CUDA %s%s" % (row["first"], " to " + row["last"] if row["last"] else " and newer") if row else "unknown"
        level = "ok" if known else ("warning" if archs is not None else "info")
        out.append(check("nvcc.gpu_arch", level, "sm_%s: %s by the active nvcc (%s); by CUDA release: %s" % (
            arch, "accepted" if known else "not accepted", host.toolkit_cuda or "none",
            span), None if known else "use a toolkit in that range", arch=arch, archs=archs))
    return out


def confirm_gcc(host, text):
    out = []
    if host.record:
        out += pipeline.host_compiler(host)
    said = re.search(r"later than (\d+)|maximum required version by CUDA \S+ \((\d+)", " ".join(text.split()))
    version = host.compiler_version
    if not out and not said:
        out.append(check("gcc.host", "info", "host gcc: %s" % (version or "none found"), None, gcc=version))
    if said and version:
        ceiling = int(said.group(1) or said.group(2))
        above = version_tuple(version)[0] > ceiling
        refusing = [r["version"] for r in host.registry["records"] if r.get("version")
                    and hostcc.gcc_ceiling(r)[0] == ceiling]
        out.append(check("gcc.message", "warning" if above else "info", "the message's toolkit accepts gcc %d at most; "
                         "the host gcc is %s%s; toolkits here with that ceiling: %s" % (ceiling, version,
                         " (above it)" if above else "", ", ".join(refusing) or "none"),
                         "pass `-ccbin g++-%d` (in NVCC_PREPEND_FLAGS, which 11.8 and 13.x read; 11.8 ignores "
                         "NVCC_CCBIN), or use a newer toolkit" % ceiling if above else None,
                         gcc=version, ceiling=ceiling, toolkits=refusing))
    return out


def confirm_libcuda(host, text):
    drv = host.driver
    compat = compat_libcuda_dirs(host.env)
    loaded = ", ".join(drv["loaded"]) or "none"
    return [check("driver.libcuda", "warning" if compat else "info", "libcuda loaded: %s; kernel module: %s; "
                  "cuda-compat dirs on LD_LIBRARY_PATH: %s" % (loaded, drv["release"] or "none",
                  ", ".join(compat) or "none"), "remove the compat dir from LD_LIBRARY_PATH" if compat else None,
                  loaded=drv["loaded"], compat=compat)]


def confirm_cuda_home_set(host, text):
    """Would an extension build here find a toolkit? doctor's check, so both say the same."""
    from cudaswitch.verify.doctor import torch_cuda_home

    return [torch_cuda_home(host)]


def confirm_library_shadowing(host, text):
    return pipeline.library_shadowing(host, say_unchecked=True)


def confirm_forward_compat(host, text):
    return pipeline.forward_compat(host, say_unchecked=True)


def confirm_toolkit_arch(host, text):
    return pipeline.toolkit_gpu_arch(host, say_unchecked=True)


def confirm_cudart_link(host, text):
    """Does the active toolkit have the unversioned libcudart.so (or the static one) a link needs?"""
    record = host.record
    if not record:
        return [check("toolkit.cudart_link", "info", "cannot check: no toolkit active", "`cudaswitch use VERSION`")]
    libs = [os.path.join(d, name) for d in record.get("lib_dirs") or []
            for name in ("libcudart.so", "libcudart_static.a")]
    have = [p for p in libs if os.path.exists(p)]
    level = "ok" if have else "error"
    return [check("toolkit.cudart_link", level, "CUDA %s at %s %s" % (record.get("version"), record["root"],
                  "has %s: link with -L%s" % (", ".join(os.path.basename(p) for p in have), os.path.dirname(have[0]))
                  if have else "has no libcudart.so or libcudart_static.a: a runtime-only install cannot link"),
                  None if have else "use a complete toolkit (`cudaswitch list` shows their status)", found=have)]


def confirm_gpu_memory(host, text):
    """GPU memory in use, from nvidia-smi where there is one; otherwise say it cannot be checked."""
    gpus = host.driver.get("gpus") or []
    smi = which("nvidia-smi", host.env)
    if not gpus:
        return [check("gpu.memory", "info", "cannot check GPU memory: no GPU visible on this host",
                      "run `nvidia-smi` on the machine that printed the message")]
    if not smi:
        return [check("gpu.memory", "info", "cannot check GPU memory: no nvidia-smi here (GPUs: %s)"
                      % ", ".join(g["name"] for g in gpus), None)]
    code, out, why = run_bounded([smi, "--query-gpu=index,name,memory.used,memory.total", "--format=csv,noheader"],
                                 host.env, 15.0)
    rows = out.decode("utf-8", "replace").strip().splitlines() if code == 0 else []
    return [check("gpu.memory", "info", "GPU memory now: %s" % ("; ".join(rows) if rows else why or "no answer"),
                  "nvidia-smi lists the processes holding it", rows=rows)]


CONFIRMERS = {
    "cuda_home_set": confirm_cuda_home_set, "library_shadowing": confirm_library_shadowing,
    "forward_compat": confirm_forward_compat, "toolkit_arch": confirm_toolkit_arch,
    "cudart_link": confirm_cudart_link, "gpu_memory": confirm_gpu_memory,
    "gpu_arch": confirm_gpu_arch, "driver": confirm_driver, "torch_driver": confirm_torch_driver,
    "torch": confirm_torch, "cuda_home": confirm_cuda_home, "loader_path": confirm_loader_path,
    "cudnn_copies": confirm_cudnn, "nccl": confirm_nccl, "nvcc_arch": confirm_nvcc_arch, "gcc": confirm_gcc,
    "libcuda": confirm_libcuda,
    "kernel_module": lambda host, text: [driverlayer.kernel_module(host)],
    "release_match": lambda host, text: [driverlayer.release_match(host)],
    "compute_mode": lambda host, text: driverlayer.compute_mode(host),
    "visible_devices": lambda host, text: [driverlayer.visible_devices(host)],
}
