"""Jupyter kernelspecs whose `env` is a switched environment, so a notebook gets that toolkit.

A kernelspec is `<jupyter data dir>/kernels/<name>/kernel.json` (the directory jupyter_client's
KernelSpecManager searches first for the user). The switched environment is computed once, at
install time, by the switch plan that `use` runs (switch/plan.py: the same module swap and host
compiler); variables the switch removes are written as empty strings, because a kernelspec can
only set; PATH and the other lists are the ones of the shell that ran `kernel install` (re-run it
after changing them). cudaswitch marks its own specs in `metadata` and lists or removes only
those: a kernel someone else wrote is never overwritten or deleted.
"""

import json
import os
import re
import shutil
import tempfile

from cudaswitch.cache import make_dir
from cudaswitch.errors import CudaSwitchError, UsageError

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")  # fullmatch: `$` would let a trailing newline in
MAX_SPEC_BYTES = 1 << 20
MARK = "cudaswitch"


def data_dir(env: dict) -> str:
    """Jupyter's user data dir as jupyter_core computes it on Linux: $JUPYTER_DATA_DIR, else
    $XDG_DATA_HOME/jupyter, else ~/.local/share/jupyter."""
    if env.get("JUPYTER_DATA_DIR"):
        return env["JUPYTER_DATA_DIR"]
    base = env.get("XDG_DATA_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "jupyter")


def kernels_dir(env: dict) -> str:
    return os.path.join(data_dir(env), "kernels")


def check_name(name: str) -> str:
    if not isinstance(name, str) or not NAME.fullmatch(name):
        from cudaswitch.safeio import quote_prefix

        raise UsageError("kernel name %s is not allowed" % quote_prefix(name or "", 40),
                         "use letters, digits, '.', '_' and '-', e.g. cuda-13.0")
    return name


def spec_for(record: dict, request: str, python: str, old_env: dict, new_env: dict, verdict: str = "") -> dict:
    """The kernel.json content: ipykernel in `python`, with the switch as its env."""
    from cudaswitch.switch import envdiff

    change = envdiff.diff(old_env, new_env)
    env = dict(change["set"])
    env.update({name: "" for name in change["unset"]})
    # jupyter_client (7+) expands $NAME in a kernelspec's env from the server's environment, so a
    # literal $ in a path is written as $$, which string.Template turns back into one $.
    env = {name: value.replace("$", "$$") for name, value in env.items()}
    short = ".".join(record["version"].split(".")[:2])
    return {"argv": [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "Python (CUDA %s)" % short, "language": "python", "env": env,
            "metadata": {MARK: {"request": request, "version": record["version"], "root": record["root"],
                                "python": python, "verdict": verdict}}}


def kernel_path(path: str, python: str) -> str:
    """The kernel's PATH: the kernel Python's own bin dir first, so `!pip` and `!python3` in a
    notebook are that Python's (a venv's bin is on no shell's PATH unless activated). Only where
    that dir holds an nvcc of its own (a conda env with cuda-nvcc) does it go right after the
    switched nvcc's dir instead: the switched toolkit stays the first nvcc."""
    bindir = os.path.dirname(python)
    entries = [entry for entry in path.split(os.pathsep) if entry and entry != bindir]
    position = 0
    if _has_nvcc(bindir):
        position = next((i + 1 for i, entry in enumerate(entries) if _has_nvcc(entry)), 0)
    return os.pathsep.join(entries[:position] + [bindir] + entries[position:])


def _has_nvcc(directory: str) -> bool:
    candidate = os.path.join(directory, "nvcc")
    return os.path.isfile(candidate) and os.access(candidate, os.X_OK)


def check_python(python: str, env: dict, timeout: float = 60.0) -> None:
    """The kernel's Python must import ipykernel under the switched environment, or no notebook starts."""
    from cudaswitch.verify.runner import run_bounded

    with tempfile.TemporaryDirectory(prefix="cudaswitch-kernel-") as private:
        code, out, err = run_bounded([python, "-c", "import ipykernel; print('ipykernel ok')"], env, timeout,
                                     cwd=private)
    if code != 0 or b"ipykernel ok" not in out:  # a program that is not Python may exit 0 too
        lines = err.splitlines() if isinstance(err, str) else err.decode("utf-8", "replace").strip().splitlines()
        why = (lines or ["it did not import ipykernel"])[-1]
        raise CudaSwitchError("%s cannot run a Jupyter kernel: %s" % (python, why[:200]),
                              "install ipykernel in it (`%s -m pip install ipykernel`) or give --python" % python)


def install(env: dict, name: str, spec: dict) -> str:
    """Write the spec as kernels/<name>/kernel.json (atomically); returns that path. A directory of
    that name holding someone else's kernel is refused."""
    directory = os.path.join(kernels_dir(env), check_name(name))
    target = os.path.join(directory, "kernel.json")
    if os.path.lexists(directory):
        _read_own(target, name)  # raises unless it is a kernel cudaswitch wrote
    try:
        make_dir(directory)  # 0700 whatever the umask: whoever may write kernel.json picks what Jupyter runs
        _write_atomically(directory, target, spec)
    except OSError as exc:
        raise CudaSwitchError("cannot write %s: %s" % (target, exc.strerror or exc)) from None
    return target


def _write_atomically(directory: str, target: str, spec: dict) -> None:
    """A reader (a running Jupyter server) sees the old spec or the new one, never half of one."""
    from cudaswitch.safeio import replace_regular

    replace_regular(target, json.dumps(spec, indent=1, sort_keys=True).encode("utf-8"), mode=0o600, own_file=True)


def listing(env: dict) -> "list[dict]":
    """The kernels cudaswitch installed: name, path, toolkit version and root, python."""
    base = kernels_dir(env)
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return []
    out = []
    for name in names:
        path = os.path.join(base, name, "kernel.json")
        spec = _load(path)
        mark = _mark(spec)
        if spec is not None and mark is not None:
            out.append({"name": name, "path": path, "display_name": spec.get("display_name"),
                        "version": mark.get("version"), "root": mark.get("root"), "python": mark.get("python"),
                        "request": mark.get("request")})
    return out


def remove(env: dict, name: str) -> str:
    """Delete kernels/<name> when cudaswitch wrote it; returns the directory removed."""
    directory = os.path.join(kernels_dir(env), check_name(name))
    if not os.path.lexists(directory):
        raise CudaSwitchError("no kernel named %s in %s" % (name, kernels_dir(env)), "see `cudaswitch kernel list`")
    _read_own(os.path.join(directory, "kernel.json"), name)
    if os.path.islink(directory):
        os.unlink(directory)
    else:
        shutil.rmtree(directory)
    return directory


def _read_own(path: str, name: str) -> dict:
    spec = _load(path)
    if spec is None or _mark(spec) is None:
        raise CudaSwitchError("kernel %s (%s) was not installed by cudaswitch: leaving it alone" % (name, path),
                              "choose another --name, or remove it with `jupyter kernelspec remove %s`" % name)
    return spec


def _mark(spec: object) -> "dict | None":
    """cudaswitch's own entry in a kernel.json's metadata; None for any other kernel, whatever
    shape its JSON has (a foreign spec's `metadata` may be a list, a string, null)."""
    metadata = spec.get("metadata") if isinstance(spec, dict) else None
    mark = metadata.get(MARK) if isinstance(metadata, dict) else None
    return mark if isinstance(mark, dict) else None


def _load(path: str) -> "dict | None":
    """A kernel.json as data: a regular file under the size cap, opened without blocking, parsed
    with nesting that cannot exhaust the interpreter's stack."""
    from cudaswitch.safeio import read_or_none

    data = read_or_none(path, MAX_SPEC_BYTES)
    if data is None or len(data) > MAX_SPEC_BYTES:
        return None
    try:
        return json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
