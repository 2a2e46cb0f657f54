"""`verify`: every check of one toolkit against nvcc, the host gcc, the driver and the user's torch,
in the environment the user will have after switching to it."""

from cudaswitch.probe import run_nvcc
from cudaswitch.core import active_root
from cudaswitch.toolkit import Toolkit, short_version, version_tuple
from cudaswitch.verify import compat, driver, facts as table, nvcc
from cudaswitch.verify.checks import cudnn_copies, three_toolkits, torch_checks
from cudaswitch.verify.compat import check
from cudaswitch.verify.runner import find_python, probe_torch

DEFAULT_TORCH_TIMEOUT = 60.0
COMPILE_TIMEOUT = 180.0


def settings(paths):
    """Timeouts and the configured Python (config.toml), with defaults when it cannot be read."""
    from cudaswitch import config

    cfg = config.load(paths)
    return {"probe_timeout": float(cfg.get("probe_timeout", 5.0)), "python": cfg.get("python"),
            "torch_timeout": float(cfg.get("torch_timeout", DEFAULT_TORCH_TIMEOUT))}


def verify_toolkit(paths, registry, record, env, python=None, smoke_compile=False, timeout=None, current_env=None):
    """{"toolkit": list-shape, "checks": [...], "driver": {...}, "torch": {...}} for `record`.

    `env` is the environment after switching (cudaswitch.envdiff.switched); `current_env`, when
    given, is the caller's own environment (it says whether the toolkit is already active)."""
    conf = settings(paths)
    torch_timeout = float(timeout or conf["torch_timeout"])
    drv = driver.driver_facts(paths, env, timeout=torch_timeout)
    checks = toolkit_checks(record, env, drv, conf["probe_timeout"])
    python = find_python(env, python, conf["python"])
    probe = probe_torch(python, env, torch_timeout) if python else {"error": "no python3 on PATH"}
    checks += torch_checks(probe, _cuda(record), drv)
    checks += [three_toolkits(env, probe), cudnn_copies(env, probe)]
    if smoke_compile:
        checks.append(compile_check(record, env, drv))
    public = Toolkit(record).public(default=record.get("real") == registry.get("default_real"),
                                    active=active_root(current_env or {}) == record["root"])
    return {"toolkit": public, "checks": checks, "driver": drv, "torch": probe}


def toolkit_checks(record, env, drv, probe_timeout):
    """The checks that need only the toolkit, the host compiler and the driver (no Python)."""
    out = [status_check(record)]
    if record["status"] == "broken" or not record.get("version"):
        return out
    cuda = _cuda(record)
    if record.get("nvcc"):
        out.append(compat.nvcc_runs(record, run_nvcc(record["nvcc"], max(probe_timeout, 10.0))))
    else:
        out.append(compat.nvcc_runs(record, {}))
    out.append(compat.driver_supports(drv, cuda, "driver.supports_toolkit", "the CUDA %s toolkit" % record["version"]))
    out.append(gcc_check(record, env, probe_timeout))
    out += toolkit_arch_checks(record, env, drv, probe_timeout)
    return out


def status_check(record):
    problems = "; ".join(record.get("problems") or [])
    level = {"ok": "ok", "incomplete": "warning", "broken": "error"}[record["status"]]
    text = "CUDA %s at %s" % (record.get("version") or "?", record["root"])
    return check("toolkit.status", level, text + (": " + problems if problems else " is complete"),
                 None if level == "ok" else "see `cudaswitch list`", status=record["status"], root=record["root"])


def gcc_check(record, env, timeout):
    cuda = record["version"]
    ceiling, source = nvcc.gcc_ceiling_from_host(record)
    if ceiling is None:
        ceiling, row = table.gcc_ceiling(cuda)
        source = "compat.toml (%s)" % row["source"] if row else None
    compiler = nvcc.host_compiler(env)
    version = nvcc.compiler_version(compiler, env, max(timeout, 10.0)) if compiler else None
    return compat.gcc_verdict(ceiling, source, compiler, version, short_version(cuda))


def toolkit_arch_checks(record, env, drv, timeout):
    """Can this nvcc target every GPU on the host? (`nvcc --list-gpu-arch`, else table 6.)"""
    if not drv.get("gpus") or not record.get("nvcc"):
        return []
    archs = nvcc.gpu_archs(record["nvcc"], env, max(timeout, 10.0))
    return [_gpu_arch_check(record, gpu, archs) for gpu in drv["gpus"]]


def _gpu_arch_check(record, gpu, archs):
    cuda = short_version(record["version"])
    want = "compute_" + gpu["capability"].replace(".", "")
    if archs is not None:  # the host answered: it wins over the table
        ok, how = want in archs, "nvcc --list-gpu-arch"
    else:  # nvcc before 11.x has no --list-gpu-arch
        row = table.arch_row(want)
        if not row:
            return check("toolkit.gpu_arch", "info", "whether nvcc %s can target %s (%s) is not known"
                         % (cuda, gpu["name"], want), None, gpu=gpu)
        have = version_tuple(cuda)[:2]
        ok = version_tuple(row["first"]) <= have and (not row["last"] or have <= version_tuple(row["last"]))
        how = "compat.toml (%s)" % row["source"]
    return check("toolkit.gpu_arch", "ok" if ok else "error", "nvcc %s %s target %s (%s)" % (
        cuda, "can" if ok else "cannot", gpu["name"], want),
        None if ok else "use a toolkit whose `nvcc --list-gpu-arch` lists %s" % want, archs=archs, gpu=gpu, source=how)


def compile_check(record, env, drv):
    """`verify --compile`: build the one-kernel program (and run it where a GPU is)."""
    result = nvcc.compile_smoke(record, env, run=bool(drv.get("gpus")), timeout=COMPILE_TIMEOUT)
    if not result["built"]:
        return check("nvcc.compile", "error", "the one-kernel program does not build: %s" % result["error"],
                     "see gcc.supported above if the host compiler is refused", **result)
    if not result.get("ran"):
        return check("nvcc.compile", "ok", "the one-kernel program builds (not run: no GPU here)", **result)
    level = "ok" if result["run_ok"] else "error"
    return check("nvcc.compile", level, "the one-kernel program builds and %s: %s" % (
        "runs" if result["run_ok"] else "fails on the GPU", result["run_output"]), **result)


def _cuda(record):
    return short_version(record.get("version") or "") or None


def current_or_none(registry, env):
    """The active (else default) toolkit's record; None where there is none, which is no error here."""
    from cudaswitch import core
    from cudaswitch.errors import CudaSwitchError

    try:
        return core.current_record(registry, env)
    except CudaSwitchError:
        return None
