"""The checks of one toolkit in one environment, each a function of a Host's facts and an Ask (what
the command asks), registered with its ids, layer and commands: a command pays only for the facts
its checks read."""

import glob
import os
import re

from cudaswitch.registry.layouts import link_remedy
from cudaswitch.toolkit import short_version, version_tuple
from cudaswitch import envstate
from cudaswitch.verify import compat, facttables
from cudaswitch.verify.compat import check
from cudaswitch.verify.checkregistry import Ask, registered

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from cudaswitch.verify.host import Host
    from cudaswitch.verify.checkregistry import CheckResult

PLAIN = Ask("verify")
ALL = ("use", "verify", "doctor", "explain")

@registered("toolkit.status", layer="toolkit", shown_by=("use", "verify", "doctor"))
def toolkit_status(host: "Host", ask: Ask = PLAIN) -> "list[CheckResult]":
    """Found, readable, and able to compile: nvcc and the parts it runs (layouts.missing_compile_parts)."""
    record = host.record
    if not record:
        return []
    problems = "; ".join(record.get("problems") or [])
    level = {"ok": "ok", "incomplete": "warning", "broken": "error"}[record["status"]]
    if record.get("missing"):
        level = "error"  # nvcc is there, so the user will compile with it, and it will fail
    text = "CUDA %s at %s" % (record.get("version") or "?", record["root"])
    hint = {"ok": None, "warning": "see `cudaswitch list`",
            "error": "reinstall the toolkit, or install the missing parts (e.g. the nvvm package for cicc)"}[level]
    line = "cannot compile, missing: " + ", ".join(record["missing"]) if record.get("missing") else None
    if not record.get("nvcc") and record["status"] == "incomplete":  # NVIDIA's 12.x wheels, a runtime package
        line = "no nvcc: cannot build .cu files (`cudaswitch install %s` has one)" % ".".join(
            (record.get("version") or "VERSION").split(".")[:2])
    return [check("toolkit.status", level, text + (": " + problems if problems else " can compile (all parts of "
                  "the compile pipeline are there)"), hint, status=record["status"], root=record["root"],
                  missing=record.get("missing") or [], line=line)]


def _usable(host: "Host") -> bool:
    return bool(host.record) and host.record["status"] != "broken" and bool(host.record.get("version"))


@registered("nvcc.runs", layer="toolkit", shown_by=("verify", "doctor"))
def nvcc_runs(host: "Host", ask: Ask = PLAIN) -> "list[CheckResult]":
    """`nvcc --version` runs and says the version the registry recorded."""
    if not _usable(host):
        return []
    record, result = host.record, host.nvcc_version
    if not record.get("nvcc"):
        return [check("nvcc.runs", "warning", "%s has no nvcc: it can run programs but not build CUDA code"
                      % record["root"], "use a toolkit with nvcc to build extensions", nvcc=None)]
    if "error" in result:
        return [check("nvcc.runs", "error", result["error"], "reinstall the toolkit or fix its permissions",
                      nvcc=record["nvcc"])]
    if short_version(result["version"]) != short_version(record["version"]):
        return [check("nvcc.runs", "warning", "nvcc reports %s but the toolkit says %s"
                      % (result["version"], record["version"]), "a mixed install: reinstall the toolkit",
                      nvcc=record["nvcc"], nvcc_version=result["version"])]
    return [check("nvcc.runs", "ok", "nvcc %s runs" % result["version"], nvcc=record["nvcc"],
                  nvcc_version=result["version"])]


@registered("driver.supports_toolkit", layer="driver", shown_by=ALL + ("audit", "image"))
def driver_for_toolkit(host: "Host", ask: Ask = PLAIN) -> "list[CheckResult]":
    """Can the driver run code built with this toolkit? (`audit` asks the same of each toolkit it lists.)"""
    if not _usable(host):
        return []
    return [driver_runs_toolkit(host.driver, host.record["version"], host.record["root"],  # type: ignore[list-item]
                                host.record.get("status") == "ok")]


def driver_runs_toolkit(driver: dict, version: str, root: str, builds: bool = True) -> dict:
    """driver.supports_toolkit for the toolkit of `version` at `root` (verify's, or each of audit's);
    builds: whether it can compile (a runtime-only tree cannot, driver or not)."""
    return compat.driver_supports(driver, short_version(version), "driver.supports_toolkit",  # type: ignore[return-value]
                                  "the CUDA %s toolkit at %s" % (version, root), builds)


def gpu_kind(name: str) -> "str | None":
    """"consumer", "datacenter" or None (not known) for a GPU's name: forward compatibility
    (cuda-compat) is for data-center GPUs only (compat.toml [gpu_kinds])."""
    kinds = facttables.load()["gpu_kinds"]
    if any(token.upper() in name.upper() for token in kinds["consumer"]):
        return "consumer"
    return "datacenter" if any(token in name + " " for token in kinds["datacenter"]) else None


@registered("driver.forward_compat", layer="driver", shown_by=("use", "verify", "doctor", "explain"))
def forward_compat(host: "Host", ask: Ask = PLAIN) -> "list[CheckResult]":
    """The toolkit's compat/libcuda (cuda-compat): ok on data-center GPUs with an older driver, error 804 on
    consumer GPUs, 803 when older than the driver. ask.unchecked: say so where there is nothing to judge."""
    say_unchecked = ask.unchecked
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
    if release and facttables.release_tuple(version) < facttables.release_tuple(release):
        return [check("driver.forward_compat", "error" if on_path else "info", "the toolkit's compat libcuda %s is "
                      "older than the installed driver %s: on the loader path it fails with CUDA error 803 (system "
                      "has unsupported display driver / cuda driver combination)%s" % (version, release,
                      "" if on_path else "; it is not on it"), "take %s off LD_LIBRARY_PATH" % compat_dir
                      if on_path else None, **facts)]
    if driver_runs_toolkit(host.driver, host.record["version"], host.record["root"])["level"] != "error":
        return [check("driver.forward_compat", "info", "the toolkit's compat libcuda %s is not needed: the driver "
                      "runs CUDA %s itself" % (version, host.toolkit_cuda), None, **facts)]
    return [_compat_for_gpus(host, facts)]


def _compat_for_gpus(host: "Host", facts: dict) -> "CheckResult":
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


def compat_libcuda(root: str) -> tuple:
    """(root/compat, newest 'libcuda.so.R' release R) or (dir, None)."""
    directory = os.path.join(root, "compat")
    names = [os.path.basename(p) for p in glob.glob(os.path.join(directory, "libcuda.so.*"))]
    releases = [n[len("libcuda.so."):] for n in names]
    releases = [r for r in releases if r.count(".") >= 1 and r.replace(".", "").isdigit()]
    return directory, max(releases, key=facttables.release_tuple) if releases else None


@registered("gcc.supported", layer="compiler", shown_by=ALL)
def host_compiler(host: "Host", ask: Ask = PLAIN) -> "list[CheckResult]":
    """The host compiler nvcc would use against the toolkit's gcc ceiling (crt/host_config.h, else
    compat.toml). Without a toolkit explain still says which gcc is here."""
    if not host.record and ask.unchecked:
        return [check("gcc.supported", "info", "cannot check the host gcc %s: no toolkit active"
                      % (host.compiler_version or "(none found)"), None, gcc=host.compiler_version)]
    if not _usable(host) or not host.record.get("nvcc"):
        return []
    ceiling, source = host.gcc_ceiling
    ignored = host.env.get("NVCC_CCBIN") if not host.reads_ccbin_var else None
    return [gcc_verdict(ceiling, source, host.compiler, host.compiler_version, host.toolkit_cuda,
                        chosen_by_switch(host.env), ignored)]


def chosen_by_switch(env: dict) -> dict:
    """The compilers the active switch set (its state remembers what they replaced), or {}."""
    state = envstate.read_state(env)
    if not state:
        return {}
    chosen = {name: env.get(name) for name in ("NVCC_CCBIN", "CUDAHOSTCXX")
              if name in state["scalars"] and env.get(name)}
    if "NVCC_PREPEND_FLAGS" in state["scalars"]:
        before, mine = state["scalars"]["NVCC_PREPEND_FLAGS"]
        # the user's own -ccbin there is theirs, not the switch's
        if envstate.leads(envstate.added_ccbin(before, mine), env.get("NVCC_PREPEND_FLAGS")):
            chosen["NVCC_PREPEND_FLAGS"] = env["NVCC_PREPEND_FLAGS"]
    return chosen


def gcc_verdict(ceiling: "int | None", ceiling_from: "str | None", compiler: "str | None", version: "str | None",
                cuda: "str | None", chosen: "dict | None" = None, ignored: "str | None" = None) -> "CheckResult":
    """Host gcc above the toolkit's ceiling: nvcc refuses every compile (an error). `chosen`: the compilers
    the switch picked; `ignored`: an NVCC_CCBIN this nvcc (11.x) does not read, which the user may think applies."""
    facts: dict = {"gcc": version, "compiler": compiler, "ceiling": ceiling, "ceiling_from": ceiling_from, "cuda": cuda,
             "chosen": chosen or {}, "ignored_nvcc_ccbin": ignored}
    if not compiler:
        return check("gcc.supported", "warning", "no host gcc found: nvcc needs one to compile",
                     "install gcc (and g++) or set NVCC_CCBIN", **facts)
    if not version:
        return check("gcc.supported", "info", "cannot check the host compiler %s: it did not report a version"
                     % compiler, "run `%s --version` to see why" % compiler, **facts)
    if ceiling is None:
        return check("gcc.supported", "info", "cannot check host gcc %s against CUDA %s: its gcc ceiling is "
                     "not known" % (version, cuda), None, **facts)
    major = version_tuple(version)[0]
    if major > ceiling and ignored:
        return check("gcc.supported", "error", "host gcc %s is newer than CUDA %s accepts (gcc %d at most), and this "
                     "nvcc ignores NVCC_CCBIN=%s" % (version, cuda, ceiling, ignored),
                     "export NVCC_PREPEND_FLAGS='-ccbin %s' (nvcc %s reads that)" % (ignored, cuda), **facts)
    if major > ceiling:
        return check("gcc.supported", "error", "host gcc %s is newer than CUDA %s accepts (gcc %d at most): nvcc "
                     "stops with \"#error -- unsupported GNU version!\"" % (version, cuda, ceiling),
                     "install gcc-%d and g++-%d (or older; `cudaswitch use` then points nvcc at them), or use a "
                     "newer CUDA" % (ceiling, ceiling), **facts)
    if chosen:
        return check("gcc.supported", "ok", "host compiler %s (gcc %s), chosen because the default gcc is above "
                     "CUDA %s's limit (gcc %d)" % (os.path.basename(compiler), version, cuda, ceiling), **facts)
    return check("gcc.supported", "ok", "host gcc %s is within CUDA %s's limit (gcc %d)" % (version, cuda, ceiling),
                 **facts)


@registered("toolkit.gpu_arch", layer="toolkit", shown_by=("use", "verify", "doctor", "explain"))
def toolkit_gpu_arch(host: "Host", ask: Ask = PLAIN) -> "list[CheckResult]":
    """Can nvcc target each GPU, and (explain) each arch the message names? --list-gpu-arch, else compat.toml."""
    named = sorted(set(re.findall(r"(?:compute|sm)_(\d+[a-z]?)", ask.text)))
    if not host.record or not host.driver.get("gpus"):
        out = [check("toolkit.gpu_arch", "info", "cannot check which architectures the toolkit targets against "
                     "the GPU: %s" % ("no toolkit active" if not host.record else "no GPU visible here"),
                     None)] if ask.unchecked and not (named and host.record) else []
    elif not _usable(host) or not host.record.get("nvcc"):
        return []
    else:
        out = [_nvcc_targets(host, gpu) for gpu in host.driver["gpus"]]
    return out + [_nvcc_accepts(host, arch) for arch in named if host.record]


def _nvcc_accepts(host: "Host", arch: str) -> "CheckResult":
    """An arch a message names (`Unsupported gpu architecture 'compute_35'`) against nvcc and the releases."""
    archs, row = host.nvcc_archs, facttables.arch_row(arch)
    known = "compute_" + arch.rstrip("af") in (archs or [])
    span = "CUDA %s%s" % (row["first"], " to " + row["last"] if row["last"] else " and newer") if row else "unknown"
    level = "ok" if known else ("error" if archs is not None else "info")
    return check("toolkit.gpu_arch", level, "nvcc %s %s sm_%s (by CUDA release: %s)" % (
        host.toolkit_cuda or "?", "can target" if known else "cannot target" if archs is not None else
        "does not list its architectures, so cannot tell whether it targets", arch, span),
        None if known else "use a toolkit in that range", arch=arch, archs=archs)


def _nvcc_targets(host: "Host", gpu: dict) -> "CheckResult":
    cuda, archs = host.toolkit_cuda, host.nvcc_archs
    sm = gpu["capability"].replace(".", "")
    row = facttables.arch_row(sm)
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
    facts: dict = {"archs": archs, "gpu": gpu, "source": how}
    if ok:
        return check("toolkit.gpu_arch", "ok", "nvcc %s can target %s (sm_%s)" % (cuda, gpu["name"], sm), **facts)
    dropped = row["last"] if row and row["last"] and version_tuple(cuda)[:2] > version_tuple(row["last"])[:2] else None
    why = (": CUDA %d dropped sm_%s; CUDA %s is the newest toolkit that still targets it"
           % (version_tuple(cuda)[0], sm, dropped)) if dropped else ""
    hint = "use CUDA %s for this GPU" % dropped if dropped else \
        "use a toolkit whose `nvcc --list-gpu-arch` lists compute_%s" % sm
    return check("toolkit.gpu_arch", "error", "nvcc %s cannot target %s (sm_%s)%s" % (cuda, gpu["name"], sm, why),
                 hint, newest_toolkit=dropped, **facts)


@registered("nvcc.compile", layer="toolkit", shown_by=("use", "verify", "doctor"))
def nvcc_compile(host: "Host", ask: Ask = PLAIN) -> "list[CheckResult]":
    """The one-kernel program, built for real once per toolkit identity (cached)."""
    record = host.record
    if not _usable(host) or not record.get("nvcc") or record.get("missing"):  # toolkit.status names what is missing
        return []
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
        flags = result.get("cannot_find")  # -lcudart_static ...: it compiled, the link failed
        if flags:
            line = "compiles but cannot link: %s not found" % ", ".join(flags)
            return [check("nvcc.compile", "error", "a one-kernel program %s%s" % (line, when), link_remedy(
                record.get("lib_dirs") or [], ["lib%s.a" % flag[2:] for flag in flags]), line=line, **result)]
        return [check("nvcc.compile", "error", "a one-kernel program does not build%s: %s" % (when, result["error"]),
                      _build_hint(result["error"]), **result)]
    if not result.get("ran"):
        return [check("nvcc.compile", "ok", "a one-kernel program compiles and links%s; not run: no GPU here"
                      % when, **result)]
    level = "ok" if result["run_ok"] else "error"
    return [check("nvcc.compile", level, "a one-kernel program builds and %s%s: %s" % (
        "runs" if result["run_ok"] else "fails on the GPU", when, result["run_output"]), None, **result)]


SAFE_PATH_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+,=@%:")


def _shell_unsafe(paths: "list[str]") -> "tuple[str, str] | None":
    """(path, its odd characters) for the first path nvcc's internal shell commands could misread."""
    for path in paths:
        odd = sorted(set(path) - SAFE_PATH_CHARS)
        if odd:
            return path, " ".join(repr(c) for c in odd)
    return None


def _build_hint(error: str) -> str:
    if "unsupported GNU version" in error:
        return ("the host gcc is too new for this toolkit: install an older gcc-N/g++-N beside it "
                "(`cudaswitch use` then picks it), or switch to a newer toolkit")
    if "cicc" in error or "ptxas" in error or "fatbinary" in error or "nvlink" in error:
        return "a part of the toolkit is missing or broken: reinstall it"
    return "run the command shown in a switched shell to see nvcc's whole output"
