"""Jupyter kernelspecs (`<jupyter data dir>/kernels/<name>/kernel.json`) whose `env` is the switch
`use` would make, computed once at install time from the shell that ran `kernel install`; a
variable the switch removes is written empty, as a kernelspec can only set. cudaswitch marks its
own specs in `metadata` and lists or removes only those: another's kernel is never touched.
"""

import json
import os
import re
import shutil
import tempfile

from cudaswitch.cache import make_dir
from cudaswitch.errors import CudaSwitchError, UsageError
from cudaswitch.safeio import quote_prefix, read_or_none, replace_regular

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")  # fullmatch: `$` would let a trailing newline in
MAX_SPEC_BYTES = 1 << 20
MARK = "cudaswitch"


def kernels_dir(env: dict) -> str:
    """Under Jupyter's user data dir as jupyter_core computes it on Linux: $JUPYTER_DATA_DIR, else
    $XDG_DATA_HOME/jupyter, else ~/.local/share/jupyter."""
    base = env.get("XDG_DATA_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".local", "share")
    return os.path.join(env.get("JUPYTER_DATA_DIR") or os.path.join(base, "jupyter"), "kernels")


def check_name(name: str) -> str:
    if not isinstance(name, str) or not NAME.fullmatch(name):
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
    """The kernel's PATH: the kernel Python's bin dir first, so a notebook's `!pip` is that Python's;
    when that dir holds an nvcc (a conda env's cuda-nvcc), right after the switched nvcc's dir."""
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
        # a running Jupyter server sees the old spec or the new one, never half of one
        replace_regular(target, json.dumps(spec, indent=1, sort_keys=True).encode("utf-8"), mode=0o600, own_file=True)
    except OSError as exc:
        raise CudaSwitchError("cannot write %s: %s" % (target, exc.strerror or exc)) from None
    return target


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


def _read_own(path: str, name: str) -> None:
    if _mark(_load(path)) is None:
        raise CudaSwitchError("kernel %s (%s) was not installed by cudaswitch: leaving it alone" % (name, path),
                              "choose another --name, or remove it with `jupyter kernelspec remove %s`" % name)


def _mark(spec: object) -> "dict | None":
    """cudaswitch's entry in a kernel.json's metadata; None for another's (of any JSON shape)."""
    metadata = spec.get("metadata") if isinstance(spec, dict) else None
    mark = metadata.get(MARK) if isinstance(metadata, dict) else None
    return mark if isinstance(mark, dict) else None


def _load(path: str) -> "dict | None":
    """A kernel.json as data: a regular file under the size cap, opened without blocking, parsed
    with nesting that cannot exhaust the interpreter's stack."""
    data = read_or_none(path, MAX_SPEC_BYTES)
    if data is None or len(data) > MAX_SPEC_BYTES:
        return None
    try:
        return json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
