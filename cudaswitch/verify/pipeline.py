"""Every check, written once as a function of a Host's facts, and the sets each command shows.

A check function takes a Host (verify/host.py) and returns a list of checks (compat.check dicts);
it asks the Host for what it needs, so a command pays only for the facts its checks read."""

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
    return [check("toolkit.status", level, text + (": " + problems if problems else " can compile (all parts of "
                  "the compile pipeline are there)"), hint, status=record["status"], root=record["root"],
                  missing=record.get("missing") or [])]


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
    return [compat.gcc_verdict(ceiling, source, host.compiler, host.compiler_version, host.toolkit_cuda,
                               hostcc.chosen_by_switch(host.env))]


def toolkit_gpu_arch(host):
    """Can this nvcc target every GPU the driver reports? (`nvcc --list-gpu-arch`, else table 6.)"""
    if not _usable(host) or not host.record.get("nvcc") or not host.driver.get("gpus"):
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
                     "list its architectures and compat.toml has no row for it" % (cuda, gpu["name"], sm), None, gpu=gpu)
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
                      "report its version" % host.compiler, "see gcc.supported", built=False)]
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
        return "the host gcc is too new for this toolkit: see gcc.supported"
    if "cicc" in error or "ptxas" in error or "fatbinary" in error or "nvlink" in error:
        return "a part of the toolkit is missing or broken: reinstall it"
    return "run the command shown in a switched shell to see nvcc's whole output"


def torch(host):
    """torch.* checks: installed, CUDA build, fits the toolkit and driver, arch list vs the GPUs."""
    return torchchecks.torch_checks(host.torch, host.toolkit_cuda, host.driver, gpus=host.gpus)


def one_toolkit(host):
    return [torchchecks.three_toolkits(host.env, host.torch)]


def library_shadowing(host):
    return torchchecks.library_shadowing(host.env, host.torch)


def cudnn_copies(host):
    return [torchchecks.cudnn_copies(host.env, host.torch)]


TOOLKIT = (toolkit_status, nvcc_runs, driver_for_toolkit, host_compiler, toolkit_gpu_arch, nvcc_compile)
USE = (toolkit_status, driver_for_toolkit, host_compiler, toolkit_gpu_arch, nvcc_compile)
TORCH = (torch, one_toolkit, cudnn_copies, library_shadowing)
VERIFY = TOOLKIT + TORCH


def run(host, functions):
    """The checks of `functions`, in order."""
    return [item for function in functions for item in function(host)]


def has_torch(host):
    """False when the Python has no torch at all: `use` then says nothing about torch."""
    return "No module named 'torch'" not in (host.torch.get("torch_error") or "")
