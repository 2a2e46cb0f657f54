"""Every check, written once as a function of a Host's facts, and the sets each command shows.

A check function takes a Host (verify/host.py) and returns a list of checks (compat.check dicts);
it asks the Host for what it needs, so a command pays only for the facts its checks read."""

import glob
import os

from cudaswitch.toolkit import version_tuple
from cudaswitch.verify import checks as torchchecks, compat, facts as table, hostcc
from cudaswitch.verify.compat import check


def toolkit_status(host):
    """Found, readable, and able to compile: nvcc and the parts it runs (layouts.missing_compile_parts)."""
    record = host.record
    problems = "; ".join(record.get("problems") or [])
    level = {"ok": "ok", "incomplete": "warning", "broken": "error"}[record["status"]]
    if record.get("missing"):
        level = "error"  # nvcc is there, so the user will compile with it, and it will fail
    text = "CUDA %s at %s" % (record.get("version") or "?", record["root"])
    hint = {"ok": None, "warning": "see `cudaswitch list`",
            "error": "reinstall the toolkit, or install the missing parts (e.g. the nvvm package for cicc)"}[level]
    line = "cannot compile, missing: " + ", ".join(record["missing"]) if record.get("missing") else None
    return [check("toolkit.status", level, text + (": " + problems if problems else " can compile (all parts of "
                  "the compile pipeline are there)"), hint, status=record["status"], root=record["root"],
                  missing=record.get("missing") or [], line=line)]


def _usable(host):
    return host.record["status"] != "broken" and bool(host.record.get("version"))


def nvcc_runs(host):
    return [compat.nvcc_runs(host.record, host.nvcc_version)] if _usable(host) else []


def driver_for_toolkit(host):
    if not _usable(host):
        return []
    return [compat.driver_supports(host.driver, host.toolkit_cuda, "driver.supports_toolkit",
                                   "the CUDA %s toolkit" % host.record["version"])]


def host_compiler(host):
    if not _usable(host) or not host.record.get("nvcc"):
        return []
    ceiling, source = host.gcc_ceiling
    ignored = host.env.get("NVCC_CCBIN") if not host.reads_ccbin_var else None
    return [compat.gcc_verdict(ceiling, source, host.compiler, host.compiler_version, host.toolkit_cuda,
                               hostcc.chosen_by_switch(host.env), ignored)]


def toolkit_gpu_arch(host, say_unchecked=False):
    """Can this nvcc target every GPU the driver reports? (`nvcc --list-gpu-arch`, else compat.toml's
    arch table.) say_unchecked: explain wants a line saying why it cannot check, where verify shows none."""
    if not host.record or not host.driver.get("gpus"):
        return [check("toolkit.gpu_arch", "info", "cannot check which architectures the toolkit targets against "
                      "the GPU: %s" % ("no toolkit active" if not host.record else "no GPU visible here"),
                      None)] if say_unchecked else []
    if not _usable(host) or not host.record.get("nvcc"):
        return []
    return [_nvcc_targets(host, gpu) for gpu in host.driver["gpus"]]


def _nvcc_targets(host, gpu):
    cuda, archs = host.toolkit_cuda, host.nvcc_archs
    sm = gpu["capability"].replace(".", "")
    row = table.arch_row(sm)
    if archs is not None:  # the host answered: it wins over the table
        ok, how = "compute_" + sm in archs, "nvcc --list-gpu-arch"
    elif row:
        have = version_tuple(cuda)[:2]
        ok = version_tuple(row["first"]) <= have and (not row["last"] or have <= version_tuple(row["last"]))
        how = "compat.toml (%s)" % row["source"]
    else:
        return check("toolkit.gpu_arch", "info", "cannot check whether nvcc %s targets %s (sm_%s): nvcc does not "
                     "list its architectures and compat.toml has no row for it" % (cuda, gpu["name"], sm), None,
                     gpu=gpu)
    facts = {"archs": archs, "gpu": gpu, "source": how}
    if ok:
        return check("toolkit.gpu_arch", "ok", "nvcc %s can target %s (sm_%s)" % (cuda, gpu["name"], sm), **facts)
    dropped = row and row["last"] and version_tuple(cuda)[:2] > version_tuple(row["last"])[:2]
    why = (": CUDA %d dropped sm_%s; CUDA %s is the newest toolkit that still targets it"
           % (version_tuple(cuda)[0], sm, row["last"])) if dropped else ""
    hint = "use CUDA %s for this GPU" % row["last"] if dropped else \
        "use a toolkit whose `nvcc --list-gpu-arch` lists compute_%s" % sm
    return check("toolkit.gpu_arch", "error", "nvcc %s cannot target %s (sm_%s)%s" % (cuda, gpu["name"], sm, why),
                 hint, newest_toolkit=row["last"] if dropped else None, **facts)


def nvcc_compile(host):
    """The one-kernel program, built for real once per toolkit identity (cached)."""
    record = host.record
    if not _usable(host) or not record.get("nvcc"):
        return []
    if record.get("missing"):
        return [check("nvcc.compile", "error", "cannot build with this toolkit: missing %s"
                      % ", ".join(record["missing"]), None, built=False, missing=record["missing"])]
    unsafe = _shell_unsafe([record["root"], record["nvcc"], host.compiler or ""])
    if unsafe:
        return [check("nvcc.compile", "info", "cannot build with this toolkit safely: nvcc runs its steps through "
                      "a shell, and %s holds characters a shell would read (%s)" % (unsafe[0], unsafe[1]),
                      "a toolkit path of letters, digits and /._-+ builds", built=False)]
    if host.compiler and not host.compiler_version:  # it did not even say its version: a build would hang too
        return [check("nvcc.compile", "info", "cannot build with this toolkit here: the host compiler %s did not "
                      "report its version" % host.compiler,
                      "check that `%s --version` answers, or point NVCC_CCBIN at a gcc that does" % host.compiler,
                      built=False)]
    result = host.build
    when = " (remembered from an earlier build)" if result.get("cached") else ""
    if not result["built"]:
        if result.get("timed_out"):
            return [check("nvcc.compile", "info", "cannot say whether this toolkit builds: %s" % result["error"],
                          "`cudaswitch verify --compile` tries again with more time", **result)]
        return [check("nvcc.compile", "error", "a one-kernel program does not build%s: %s" % (when, result["error"]),
                      _build_hint(result["error"]), **result)]
    if not result.get("ran"):
        return [check("nvcc.compile", "ok", "a one-kernel program compiles and links%s; not run: no GPU here"
                      % when, **result)]
    level = "ok" if result["run_ok"] else "error"
    return [check("nvcc.compile", level, "a one-kernel program builds and %s%s: %s" % (
        "runs" if result["run_ok"] else "fails on the GPU", when, result["run_output"]), None, **result)]


SAFE_PATH_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+,=@%:")


def _shell_unsafe(paths):
    """(path, its odd characters) for the first path nvcc's internal shell commands could misread."""
    for path in paths:
        odd = sorted(set(path) - SAFE_PATH_CHARS)
        if odd:
            return path, " ".join(repr(c) for c in odd)
    return None


def _build_hint(error):
    if "unsupported GNU version" in error:
        return ("the host gcc is too new for this toolkit: install an older gcc-N/g++-N beside it "
                "(`cudaswitch use` then picks it), or switch to a newer toolkit")
    if "cicc" in error or "ptxas" in error or "fatbinary" in error or "nvlink" in error:
        return "a part of the toolkit is missing or broken: reinstall it"
    return "run the command shown in a switched shell to see nvcc's whole output"


def torch(host):
    """torch.* checks: installed, CUDA build, fits the toolkit and driver, arch list vs the GPUs."""
    return torchchecks.torch_checks(host.torch, host.toolkit_cuda, host.driver, gpus=host.gpus)


def one_toolkit(host):
    return [torchchecks.three_toolkits(host.env, host.torch)]


def library_shadowing(host, say_unchecked=False):
    found = torchchecks.library_shadowing(host.env, host.torch)
    if found or not say_unchecked:
        return found
    return [torchchecks.shadowing_unchecked(host.python, host.torch)]


def cudnn_copies(host):
    return [torchchecks.cudnn_copies(host.env, host.torch)]


# Forward compatibility (cuda-compat) is for data-center GPUs only; GeForce/TITAN get error 804.
DATACENTER = ("Tesla", "A100", "A800", "A30", "A40", "A10", "A16", "A2 ", "H100", "H200", "H800", "H20", "L4",
              "L40", "L20", "B100", "B200", "GB200", "GH200", "T4", "V100", "P100")


def gpu_kind(name):
    if "GeForce" in name or "TITAN" in name.upper():
        return "consumer"
    return "datacenter" if any(token in name + " " for token in DATACENTER) else None


def forward_compat(host, say_unchecked=False):
    """The toolkit's compat/libcuda.so.* (cuda-compat): ok on data-center GPUs with an older driver,
    error 804 on consumer GPUs, error 803 when it is older than the installed driver.
    say_unchecked: a line where there is nothing to judge (explain), none for verify."""
    if not host.record:
        return [check("driver.forward_compat", "info", "cannot check forward compatibility: no toolkit active",
                      None)] if say_unchecked else []
    if not _usable(host):
        return []
    compat_dir, version = compat_libcuda(host.record["root"])
    if not version:
        return [check("driver.forward_compat", "info", "the active toolkit %s has no compat/libcuda (cuda-compat)"
                      % host.record["root"], None)] if say_unchecked else []
    on_path = os.path.realpath(compat_dir) in {os.path.realpath(d) for d in (host.env.get("LD_LIBRARY_PATH") or "")
                                               .split(os.pathsep) if d}
    facts = {"compat_dir": compat_dir, "compat_version": version, "on_loader_path": on_path,
             "driver_release": host.driver.get("release")}
    release = host.driver.get("release")
    if release and table.release_tuple(version) < table.release_tuple(release):
        return [check("driver.forward_compat", "error" if on_path else "info", "the toolkit's compat libcuda %s is "
                      "older than the installed driver %s: on the loader path it fails with CUDA error 803 (system "
                      "has unsupported display driver / cuda driver combination)%s" % (version, release,
                      "" if on_path else "; it is not on it"), "take %s off LD_LIBRARY_PATH" % compat_dir
                      if on_path else None, **facts)]
    if compat.driver_supports(host.driver, host.toolkit_cuda, "x", "x")["level"] != "error":
        return [check("driver.forward_compat", "info", "the toolkit's compat libcuda %s is not needed: the driver "
                      "runs CUDA %s itself" % (version, host.toolkit_cuda), None, **facts)]
    return [_compat_for_gpus(host, facts)]


def _compat_for_gpus(host, facts):
    kinds = {gpu["name"]: gpu_kind(gpu["name"]) for gpu in host.gpus}
    consumer = [name for name, kind in kinds.items() if kind == "consumer"]
    what = "compat libcuda %s" % facts["compat_version"]
    if consumer:
        return check("driver.forward_compat", "error" if facts["on_loader_path"] else "warning", "the toolkit's %s "
                     "cannot help on %s: forward compatibility is for data-center GPUs, elsewhere CUDA fails with "
                     "error 804 (forward compatibility was attempted on non supported HW)"
                     % (what, ", ".join(consumer)),
                     "update the NVIDIA driver instead", gpus=kinds, **facts)
    if not kinds or None in kinds.values():
        return check("driver.forward_compat", "info", "cannot check whether the toolkit's %s works here: %s" % (
            what, "no GPU visible" if not kinds else "GPU kind not known"), None, gpus=kinds, **facts)
    if facts["on_loader_path"]:
        return check("driver.forward_compat", "ok", "the toolkit's %s runs CUDA %s on %s with driver %s (forward "
                     "compatibility)" % (what, host.toolkit_cuda, ", ".join(kinds), facts["driver_release"] or "?"),
                     gpus=kinds, **facts)
    return check("driver.forward_compat", "warning", "the toolkit's %s would run CUDA %s on %s (forward "
                 "compatibility), but it is not on the loader path" % (what, host.toolkit_cuda, ", ".join(kinds)),
                 "put %s first on LD_LIBRARY_PATH" % facts["compat_dir"], gpus=kinds, **facts)


def compat_libcuda(root):
    """(root/compat, newest 'libcuda.so.R' release R) or (dir, None)."""
    directory = os.path.join(root, "compat")
    names = [os.path.basename(p) for p in glob.glob(os.path.join(directory, "libcuda.so.*"))]
    releases = [n[len("libcuda.so."):] for n in names]
    releases = [r for r in releases if r.count(".") >= 1 and r.replace(".", "").isdigit()]
    return directory, max(releases, key=table.release_tuple) if releases else None


TOOLKIT = (toolkit_status, nvcc_runs, driver_for_toolkit, forward_compat, host_compiler, toolkit_gpu_arch,
           nvcc_compile)
USE = (toolkit_status, driver_for_toolkit, forward_compat, host_compiler, toolkit_gpu_arch, nvcc_compile)
TORCH = (torch, one_toolkit, cudnn_copies, library_shadowing)
VERIFY = TOOLKIT + TORCH


def run(host, functions):
    """The checks of `functions`, in order."""
    return [item for function in functions for item in function(host)]


def has_torch(host):
    """False when the Python has no torch at all: `use` then says nothing about torch."""
    return "No module named 'torch'" not in (host.torch.get("torch_error") or "")
