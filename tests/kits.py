"""Real CUDA toolkits for tests, built from NVIDIA's PyPI wheels and cached between runs.

Stdlib only; the one download tool is ``sys.executable -m pip`` with the user's own pip config.
Kits land in ``cache_dir()/<name>-<hash of the requirements>`` (so changing a pin never reuses a
stale tree). A build runs in a temp dir beside its target under an fcntl lock and is renamed into
place, so parallel pytest workers build each kit once and never see a half-made one.

Layouts derived from a kit (``install_classic``, ``conda_env``, ``venv_with_wheels``) are made of
HARDLINKS into the cache: cheap, but writing or chmod-ing such a file in place changes the cache.
A test that wants to break a file calls ``detach(path)`` first (or unlinks/replaces it).

What nvcc needs, found by running it (gcc 12, CUDA 13.0.88 and 13.1.115 wheels):
- In the bare wheel tree ``nvidia/cu13``, ``nvcc --version`` and ``nvcc -c k.cu -o k.o`` work as is.
- Linking (``nvcc k.cu -o k``) fails there: with no ``targets/`` dir nvcc sets ``_TARGET_SIZE_=64``
  and looks for libcudart_static.a / libcudadevrt.a in ``<root>/lib64``, which the wheels lack.
  A ``lib64 -> lib`` symlink (or ``-L<root>/lib``) fixes it; ``-cudart shared`` also needs a
  ``libcudart.so`` link (wheels ship only ``libcudart.so.13``). ``cuda13()`` leaves the tree as
  pip makes it, because that is what a venv really holds.
- nvcc sets ``_TARGET_DIR_=targets/x86_64-linux`` whenever ``<bin>/../targets/x86_64-linux`` exists;
  the stock nvcc.profile then finds headers and libs there. That is why the classic and conda
  layouts below compile and link with no fixups beyond the layout itself.
"""
from __future__ import annotations

import errno
import fcntl
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

PIP_TIMEOUT = 1800  # a cold download is ~600 MB for everything; slow links need the room
RUN_TIMEOUT = 120
TRIPLE = "targets/x86_64-linux"
CU13_PACKAGES = ("nvidia-cuda-nvcc", "nvidia-cuda-runtime", "nvidia-cuda-crt", "nvidia-nvvm",
                 "nvidia-cuda-cccl")
# Resolved at import: tests that point HOME elsewhere must not trigger a fresh download.
_HOME_CACHE = Path.home() / ".cache" / "cudaswitch-test-kits"


class KitUnavailable(RuntimeError):
    """A kit cannot be built here (no network, package gone); outside pytest this is raised."""


def cache_dir() -> Path:
    d = Path(os.environ.get("CUDASWITCH_TEST_KITS") or _HOME_CACHE)
    d.mkdir(parents=True, exist_ok=True)
    return d


def require(what: str) -> str:
    """Path (or module origin) of a tool the test needs; missing: fail when CI=true, else skip.

    ``lmod`` means Lmod's ``$LMOD_CMD``; ``torch``/``numpy`` are Python modules of this interpreter;
    anything else is looked up on PATH (zsh, fish, gcc, ...)."""
    if what == "lmod":
        found = lmod_cmd()
    elif what in ("torch", "numpy"):
        spec = importlib.util.find_spec(what)
        found = spec.origin if spec else None
    else:
        found = shutil.which(what)
    if not found:
        _give_up(f"{what} is not installed on this machine")
    return str(found)


def _give_up(reason: str, optional: bool = False):
    try:
        import pytest
    except ImportError:
        raise KitUnavailable(reason) from None
    if os.environ.get("CI", "").lower() == "true" and not optional:
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


def detach(path) -> Path:
    """Give a hardlinked file its own inode, so a test may modify it without touching the cache."""
    path = Path(path)
    tmp = path.with_name(path.name + ".kits-detach")
    shutil.copy2(path, tmp)
    os.replace(tmp, path)
    return path


# ---------------------------------------------------------------- cache and pip


def _run(cmd, timeout=RUN_TIMEOUT, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                          timeout=timeout, **kw)


def _cached(name: str, build) -> Path:
    """``cache_dir()/name``, made by ``build(tmpdir)`` at most once across processes."""
    root = cache_dir()
    final = root / name
    if final.is_dir():
        return final
    with open(root / f".{name}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released on close; pip has a timeout, so this is bounded
        if final.is_dir():
            return final
        for stale in root.glob(f".{name}.tmp-*"):  # left by a killed worker; we hold the lock
            shutil.rmtree(stale, ignore_errors=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{name}.tmp-", dir=root))
        tmp.chmod(0o755)  # mkdtemp's 0700 would hide the kit from tests that run as another user
        try:
            build(tmp)
            os.rename(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return final


def _pip() -> list[str]:
    """This interpreter's pip; else the first pip on PATH (a uv-made venv may lack pip). The
    wheels are py3-none data, so any pip installs the same files."""
    if importlib.util.find_spec("pip"):
        return [sys.executable, "-m", "pip"]
    other = shutil.which("pip3") or shutil.which("pip")
    if not other:
        raise KitUnavailable(f"no pip: neither {sys.executable} -m pip nor pip on PATH")
    return [other]


def wheel_tree(name: str, requirements: list[str], check=None) -> Path:
    """``pip install --no-deps --target`` of exactly these requirements, cached; returns the target.

    --no-deps keeps anything (torch, ...) from being pulled in; --only-binary never builds sdists.
    ``check(tree)`` runs on the fresh tree before it is published."""
    key = hashlib.sha256("\n".join(requirements).encode()).hexdigest()[:10]

    def build(tmp: Path):
        cmd = [*_pip(), "install", "--no-deps", "--no-compile",
               "--only-binary=:all:", "--disable-pip-version-check", "--no-input",
               "--target", tmp, *requirements]
        env = {**os.environ, "PIP_REQUIRE_VIRTUALENV": "0"}  # --target needs no venv
        try:
            p = _run(cmd, timeout=PIP_TIMEOUT, env=env)
        except subprocess.TimeoutExpired:
            raise KitUnavailable(f"pip timed out after {PIP_TIMEOUT}s installing {requirements}") from None
        if p.returncode:
            tail = (p.stderr or p.stdout).strip()[-1500:]
            raise KitUnavailable(f"pip could not install {requirements}:\n{tail}")
        (tmp / ".kits-requirements").write_text("\n".join(requirements) + "\n")
        if check:
            check(tmp)

    return _cached(f"{name}-{key}", build)


_FAILED: dict[str, str] = {}  # one failed pip run per kit and process, not one per test


def _kit(name, requirements, check=None, optional=False) -> Path:
    if name not in _FAILED:
        try:
            return wheel_tree(name, requirements, check)
        except KitUnavailable as e:
            _FAILED[name] = str(e)
    _give_up(_FAILED[name], optional=optional)


def _expect_release(tool: Path, minor: str) -> None:
    out = _run([tool, "--version"]).stdout
    if f"release {minor}," not in out:
        raise RuntimeError(f"{tool} --version does not say 'release {minor}': {out!r}")


def dist_versions(tree: Path) -> dict[str, str]:
    """{"nvidia-cuda-nvcc": "13.1.115", ...} from the ``*.dist-info`` dirs pip wrote in ``tree``."""
    out = {}
    for d in Path(tree).glob("*.dist-info"):
        name, _, version = d.name[: -len(".dist-info")].partition("-")
        out[name.lower().replace("_", "-")] = version
    return out


# ---------------------------------------------------------------- the wheel kits


def cuda13(minor: str = "13.1") -> Path:
    """``nvidia/cu13`` of CUDA ``minor`` (13.0 or 13.1): bin/nvcc, include/, lib/, nvvm/."""
    if not minor.startswith("13."):
        raise ValueError(f"cuda13() takes 13.x, not {minor!r}")
    reqs = [f"{p}=={minor}.*" for p in CU13_PACKAGES]
    check = lambda t: _expect_release(t / "nvidia/cu13/bin/nvcc", minor)  # noqa: E731
    return _kit(f"cu13-{minor}", reqs, check) / "nvidia" / "cu13"


def cuda12_runtime() -> Path:
    """``nvidia/`` with cuda_runtime/ (headers, libcudart.so.12) and cuda_nvcc/ (ptxas, NO nvcc)."""
    reqs = ["nvidia-cuda-runtime-cu12==12.4.*", "nvidia-cuda-nvcc-cu12==12.4.*"]
    check = lambda t: _expect_release(t / "nvidia/cuda_nvcc/bin/ptxas", "12.4")  # noqa: E731
    return _kit("cu12-12.4", reqs, check) / "nvidia"


def cuda11_runtime() -> Path:
    """``nvidia/cuda_runtime`` of 11.8 (libcudart.so.11.0), from PyPI like the others."""
    return _kit("cu11-11.8", ["nvidia-cuda-runtime-cu11==11.8.*"]) / "nvidia"


def cuda11_nvcc_wheel() -> Path:
    """``nvidia/cuda_nvcc`` of 11.8.89: ptxas, include/crt, nvvm/ (libnvvm, libdevice), NO nvcc."""
    return _kit("cu11-nvcc-11.8", ["nvidia-cuda-nvcc-cu11==11.8.89"]) / "nvidia" / "cuda_nvcc"


# ---------------------------------------------------------------- layout helpers


def _link_or_copy(src, dst):
    try:
        os.link(src, dst)
    except OSError as e:  # other filesystem, or one without hardlinks
        if e.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
            raise
        shutil.copy2(src, dst)


def _link_tree(src: Path, dst: Path, skip=("__init__.py", "__pycache__")) -> None:
    """``cp -al src dst`` (merging into dst); wheel-only ``__init__.py`` files left out."""
    shutil.copytree(src, dst, symlinks=True, ignore=shutil.ignore_patterns(*skip),
                    copy_function=_link_or_copy, dirs_exist_ok=True)


def _symlink(link: Path, target: str) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)


def _write(path: Path, text: str, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)  # never write through a hardlink into the cache
    path.write_text(text)
    path.chmod(mode)


def _version_so(libdir: Path, soname: str, full: str) -> None:
    """Rename the wheel's ``libcudart.so.13`` to ``libcudart.so.13.1.80`` with the soname and dev
    links beside it, as NVIDIA's and conda's packages lay it out (full = the dist-info version)."""
    stem = soname[: soname.index(".so") + 3]  # "libcudart.so"
    real = f"{stem}.{full}"
    os.rename(libdir / soname, libdir / real)
    (libdir / soname).symlink_to(real)
    (libdir / stem).unlink(missing_ok=True)
    (libdir / stem).symlink_to(soname)


_COMPONENT_NAMES = {"cuda_cccl": "CUDA C++ Core Compute Libraries",
                    "cuda_cudart": "CUDA Runtime (cudart)", "cuda_nvcc": "CUDA NVCC"}


def _version_json(dest: Path, sdk: str, **components: str) -> None:
    """NVIDIA's version.json: {"cuda": {"name": "CUDA SDK", "version": ...}, "cuda_nvcc": ...}."""
    sdk = sdk if sdk.count(".") >= 2 else sdk + ".0"
    data = {"cuda": {"name": "CUDA SDK", "version": sdk}}
    for key, version in sorted(components.items()):
        data[key] = {"name": _COMPONENT_NAMES[key], "version": version}
    _write(dest / "version.json", json.dumps(data, indent=3) + "\n")


def _classic_skeleton(dest: Path) -> Path:
    """NVIDIA's .run/.deb layout: files under targets/x86_64-linux, include and lib64 link to it."""
    tgt = dest / TRIPLE
    (tgt / "include").mkdir(parents=True, exist_ok=True)
    (tgt / "lib").mkdir(parents=True, exist_ok=True)
    _symlink(dest / "include", f"{TRIPLE}/include")
    _symlink(dest / "lib64", f"{TRIPLE}/lib")
    return tgt


# ---------------------------------------------------------------- classic toolkits


def install_classic(src_cu13: Path, dest: Path, version: str, *, version_json: bool = True) -> Path:
    """A ``/usr/local/cuda-13.x`` tree at ``dest`` from a ``cuda13()`` dir (hardlinks).

    ``version`` is the SDK version written as ``cuda.version`` ("13.1" -> "13.1.0"); the component
    versions come from the wheels' dist-info. ``version_json=False`` mimics this host's
    /usr/local/cuda-13.0, which has none."""
    src, dest = Path(src_cu13), Path(dest)
    comps = dist_versions(src.parent.parent)
    tgt = _classic_skeleton(dest)
    _link_tree(src / "include", tgt / "include")
    _link_tree(src / "lib", tgt / "lib")
    _version_so(tgt / "lib", "libcudart.so.13", comps["nvidia-cuda-runtime"])
    _link_tree(src / "bin", dest / "bin")
    _link_tree(src / "nvvm", dest / "nvvm")
    if version_json:
        _version_json(dest, version, cuda_nvcc=comps["nvidia-cuda-nvcc"],
                      cuda_cudart=comps["nvidia-cuda-runtime"],
                      cuda_cccl=comps["nvidia-cuda-cccl"])
    return dest


def install_classic_runtime12(dest: Path, version: str = "12.4.1") -> Path:
    """A runtime-only 12.4 tree (what a cuda-runtime + ptxas install leaves): headers, lib64 with
    libcudart.so.12*, bin/ptxas, nvvm/, version.json; no nvcc. (12.4.127/12.4.131 are 12.4.1.)"""
    nv, dest = cuda12_runtime(), Path(dest)
    comps = dist_versions(nv.parent)
    rt, nvc = nv / "cuda_runtime", nv / "cuda_nvcc"
    tgt = _classic_skeleton(dest)
    _link_tree(rt / "include", tgt / "include")
    _link_tree(nvc / "include", tgt / "include")  # crt/, nvPTXCompiler.h: no overlap with cudart's
    _link_tree(rt / "lib", tgt / "lib")
    _version_so(tgt / "lib", "libcudart.so.12", comps["nvidia-cuda-runtime-cu12"])
    _link_tree(nvc / "bin", dest / "bin")
    _link_tree(nvc / "nvvm", dest / "nvvm")
    _version_json(dest, version, cuda_cudart=comps["nvidia-cuda-runtime-cu12"],
                  cuda_nvcc=comps["nvidia-cuda-nvcc-cu12"])
    return dest


# ---------------------------------------------------------------- conda envs

# conda-forge's cuda-nvcc-impl patches nvcc.profile so TOP is the targets dir (it also links
# targets/x86_64-linux/nvvm -> nvvm). Found by running nvcc: the STOCK profile works in this
# layout too, because nvcc sets _TARGET_DIR_ when targets/x86_64-linux exists. We ship conda's
# form so the fixture matches a real env; both compile and link k.cu with gcc 12.
_CONDA_NVCC_PROFILE = """
TOP              = $(_HERE_)/../$(_TARGET_DIR_)

CICC_PATH        = $(TOP)/nvvm/bin
NVVMIR_LIBRARY_DIR = $(TOP)/nvvm/libdevice

LD_LIBRARY_PATH += $(TOP)/lib:
PATH            += $(TOP)/bin:$(CICC_PATH):$(TOP)/../../bin:$(TOP)/../../nvvm/bin:

INCLUDES        +=  "-I$(TOP)/include" $(_SPACE_)
SYSTEM_INCLUDES +=  "-isystem" "$(TOP)/include/cccl" $(_SPACE_)

LIBRARIES        =+ $(_SPACE_) "-L$(TOP)/lib/stubs" "-L$(TOP)/lib"

CUDAFE_FLAGS    +=
PTXAS_FLAGS     +=
"""


def _conda_record(dest: Path, name: str, version: str, build: str, files=(), depends=(),
                  channel: str = "conda-forge") -> None:
    """One ``conda-meta/<name>-<version>-<build>.json`` with the keys conda itself writes."""
    fn = f"{name}-{version}-{build}.conda"
    url = f"https://conda.anaconda.org/{channel}/linux-64/{fn}"
    number = [int(n) for n in build.split("_") if n.isdigit()] or [0]  # "h6a678d5_0" -> 0
    rec = {"name": name, "version": version, "build": build, "build_number": number[-1],
           "channel": url.rsplit("/", 2)[0],
           "subdir": "linux-64", "fn": fn, "url": url, "depends": list(depends),
           "constrains": [], "license": "LicenseRef-NVIDIA-End-User-License-Agreement"
           if name.startswith("cuda") else "various", "files": sorted(files),
           "requested_spec": "", "timestamp": 1700000000000}
    _write(dest / "conda-meta" / f"{name}-{version}-{build}.json", json.dumps(rec, indent=2))


def _files_under(dest: Path, *tops: str) -> list[str]:
    return [str(p.relative_to(dest)) for top in tops for p in (dest / top).rglob("*")
            if p.is_symlink() or p.is_file()]


def _conda_common(dest: Path) -> None:
    """What every conda env has besides CUDA: its own python, pip, libstdc++ and libssl.
    The libraries are small stand-ins; they are here so that a switch which puts the env's lib/
    or bin/ first on a path is caught by tests (see the switching rules in the README)."""
    for tool in ("python", "pip"):
        _write(dest / "bin" / tool, f"#!/bin/sh\necho conda-{tool}\n", 0o755)
    _write(dest / "lib" / "libstdc++.so.6", "stand-in for conda-forge libstdcxx\n")
    _write(dest / "lib" / "libssl.so.3", "stand-in for conda-forge openssl\n")
    _write(dest / "conda-meta" / "history", "==> 2024-01-01 00:00:00 <==\n# cmd: conda create\n")
    _conda_record(dest, "python", "3.11.9", "hb806964_0_cpython", ["bin/python", "bin/pip"])
    _conda_record(dest, "libstdcxx", "14.1.0", "hc0a3c3a_1", ["lib/libstdc++.so.6"])
    _conda_record(dest, "openssl", "3.3.1", "h4bc722e_2", ["lib/libssl.so.3"])


def _conda_nvcc13(dest: Path) -> None:
    src = cuda13("13.0")
    comps = dist_versions(src.parent.parent)
    nvcc_v, cudart_v = comps["nvidia-cuda-nvcc"], comps["nvidia-cuda-runtime"]
    tgt = dest / TRIPLE
    _link_tree(src / "include", tgt / "include")
    _link_tree(src / "lib", tgt / "lib")
    _version_so(tgt / "lib", "libcudart.so.13", cudart_v)
    for so in ("libcudart.so.13", f"libcudart.so.{cudart_v}"):  # conda links shared libs up
        _symlink(dest / "lib" / so, f"../{TRIPLE}/lib/{so}")
    _link_tree(src / "bin", dest / "bin")
    _write(dest / "bin" / "nvcc.profile", _CONDA_NVCC_PROFILE)
    _link_tree(src / "nvvm", dest / "nvvm")
    _symlink(tgt / "nvvm", "../../nvvm")
    _symlink(tgt / "bin" / "nvcc", "../../../bin/nvcc")
    # Real envs: cuda-nvcc and cuda-version are metapackages (no files); the files belong to
    # cuda-nvcc-tools/-impl and cuda-cudart(-dev). Discovery must read versions, not file lists.
    _conda_record(dest, "cuda-nvcc", nvcc_v, "0", depends=[f"cuda-nvcc-tools {nvcc_v}"])
    _conda_record(dest, "cuda-version", "13.0", "3", depends=[])
    _conda_record(dest, "cuda-nvcc-tools", nvcc_v, "0",
                  _files_under(dest, "bin", "nvvm") + [f"{TRIPLE}/bin/nvcc"])
    _conda_record(dest, "cuda-cudart", cudart_v, "0",
                  _files_under(dest, "lib", f"{TRIPLE}/lib"))  # headers: -dev pkgs, left out


def _conda_cudatoolkit11(dest: Path) -> None:
    rt = cuda11_runtime() / "cuda_runtime"  # skips the test when the cu11 wheel is unavailable
    cudart_v = dist_versions(rt.parent.parent)["nvidia-cuda-runtime-cu11"]
    _link_tree(rt / "lib", dest / "lib")
    _version_so(dest / "lib", "libcudart.so.11.0", cudart_v)
    (dest / "lib" / "libOpenCL.so.1").unlink(missing_ok=True)  # the wheel's extra, not conda's
    _conda_record(dest, "cudatoolkit", "11.8.0", "h6a678d5_0", _files_under(dest, "lib"),
                  channel="anaconda")


def conda_env(dest: Path, kind: str) -> Path:
    """A conda env at ``dest``: kind "cuda-nvcc-13" (CUDA 12+ style: targets/x86_64-linux, real
    nvcc 13.0) or "cudatoolkit-11" (the old libraries-only package: lib/libcudart.so.11.0, no
    nvcc), plus the python/pip/libstdc++/libssl every env has."""
    dest = Path(dest)
    builders = {"cuda-nvcc-13": _conda_nvcc13, "cudatoolkit-11": _conda_cudatoolkit11}
    if kind not in builders:
        raise ValueError(f"conda_env kind must be one of {sorted(builders)}, not {kind!r}")
    builders[kind](dest)
    _conda_common(dest)
    return dest


# ---------------------------------------------------------------- venvs


def site_packages(venv: Path) -> Path:
    pyver = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    return Path(venv) / "lib" / pyver / "site-packages"


def venv_with_wheels(dest: Path, minor: str = "13.0", *, with_pip: bool = False) -> Path:
    """``python -m venv dest`` holding the CUDA 13 wheels, as ``pip install nvidia-cuda-nvcc ...``
    leaves them (nvidia/cu13 + dist-info, hardlinked from the cache). Without pip by default:
    ensurepip costs seconds and the wheels are already there."""
    tree, dest = cuda13(minor).parent.parent, Path(dest)
    cmd = [sys.executable, "-m", "venv", *([] if with_pip else ["--without-pip"]), dest]
    p = _run(cmd, timeout=300)
    if p.returncode:
        raise RuntimeError(f"python -m venv failed: {p.stderr[-1500:]}")
    site = site_packages(dest)
    for entry in tree.iterdir():
        if entry.name == "nvidia" or entry.name.endswith(".dist-info"):
            _link_tree(entry, site / entry.name, skip=("__pycache__",))
    _expect_release(site / "nvidia/cu13/bin/nvcc", minor)
    return dest


# ---------------------------------------------------------------- Lmod

_LMOD_PLACES = ("/usr/share/lmod/lmod/libexec/lmod",   # Debian/Ubuntu/Fedora/EPEL packages
                "/opt/apps/lmod/lmod/libexec/lmod",      # Lmod's own default prefix (TACC)
                "/usr/local/lmod/lmod/libexec/lmod", "/opt/lmod/lmod/libexec/lmod")


def lmod_cmd() -> Path | None:
    for c in (os.environ.get("LMOD_CMD"), *_LMOD_PLACES):
        if c and os.access(c, os.X_OK):
            return Path(c)
    return None


def lmod_env(modulepath: Path, base: dict | None = None) -> dict:
    """The variables /etc/profile.d/lmod.sh sets, with MODULEPATH = ``modulepath`` only.

    Pass ``base`` (e.g. os.environ) to get it back without any loaded-module state
    (``_ModuleTable*``, ``__LMOD_*``, LOADEDMODULES, _LMFILES_) plus these variables.
    Checked with Lmod 8.6.19 (Debian bookworm), no shell init sourced; all exit 0:

        $LMOD_CMD bash load cuda/13.1          # stdout: shell code (PATH=...; export PATH; ...)
        $LMOD_CMD bash unload cuda             # likewise, undoes it
        $LMOD_DIR/spider -o spider-json "$MODULEPATH"
            # stdout: {"cuda": {"<dir>/cuda/13.1.lua": {"fullName": "cuda/13.1",
            #   "Version": "13.1", "pathA": {"<root>/bin": 1}, "lpathA": {"<root>/lib64": 1},
            #   "mpath": ..., "whatis": [...], "help": ...}}}
        $LMOD_DIR/spider -o jsonSoftwarePage "$MODULEPATH"  # [{"package": "cuda", ...}]
        $LMOD_CMD bash --terse avail           # names on STDERR; stdout is shell code

    NOT supported: ``$LMOD_CMD bash spider -o spider-json`` ("Unable to find: -o").
    For a ``module`` shell function, source ``$LMOD_PKG/init/bash`` (zsh, fish: same dir).
    LMOD_IGNORE_CACHE=1 keeps Lmod from answering from a system or ~/.cache/lmod spider cache."""
    cmd = lmod_cmd()
    if cmd is None:
        _give_up("Lmod is not installed (Debian: apt-get install lmod)")
    pkg = cmd.parent.parent
    env = {"LMOD_CMD": str(cmd), "LMOD_DIR": str(cmd.parent), "LMOD_PKG": str(pkg),
           "LMOD_ROOT": str(pkg.parent), "MODULESHOME": str(pkg), "LMOD_sys": os.uname().sysname,
           "MODULEPATH": str(modulepath), "LMOD_IGNORE_CACHE": "1"}
    if pkg.resolve().name[:1].isdigit():  # /usr/share/lmod/lmod -> 8.6.19
        env["LMOD_VERSION"] = pkg.resolve().name
    if base is None:
        return env
    state = ("_ModuleTable", "__LMOD_", "LMOD_", "LOADEDMODULES", "_LMFILES_", "MODULEPATH")
    return {k: v for k, v in base.items() if not k.startswith(state)} | env


def write_cuda_module(modulepath: Path, version: str, root: Path) -> Path:
    """``<modulepath>/cuda/<version>.lua`` as HPC sites write one."""
    root = str(root)
    eq = "=" * next(n for n in range(1, 99) if f"]{'=' * n}]" not in root)
    lua = f"""-- CUDA {version}, written by tests/kits.py in the shape sites use
help([[NVIDIA CUDA Toolkit {version}]])
whatis("Name: CUDA")
whatis("Version: {version}")
family("cuda")
local root = [{eq}[{root}]{eq}]
setenv("CUDA_HOME", root)
prepend_path("PATH", pathJoin(root, "bin"))
prepend_path("LD_LIBRARY_PATH", pathJoin(root, "lib64"))
"""
    path = Path(modulepath) / "cuda" / f"{version}.lua"
    _write(path, lua)
    return path


def environment_modules() -> Path:
    """Environment Modules' ``modulecmd.tcl`` (Debian's package, run by the system tclsh).

    Debian's ``environment-modules`` CONFLICTS with ``lmod``, which the other tests need, so it is
    not installed: ``apt-get download`` + ``dpkg -x`` into ``cache_dir()/envmodules``. Checked with
    5.2.0 (bookworm): modulecmd.tcl's #! is /usr/bin/tclsh8.6 (package ``tcl8.6``, which lmod pulls
    in); it looks for its optional libtclenvmodules.so under /usr/lib/x86_64-linux-gnu and runs in
    pure Tcl without it; /etc/environment-modules (siteconfig, rc) is absent here and not needed.
    All exit 0, reports on STDERR, shell code on stdout:

        modulecmd.tcl python avail -j      # {"<dir>": {"cuda/13.1": {"type": "modulefile", "pathname": ...}}}
        modulecmd.tcl python avail -t      # <dir>:  then  cuda/12.4(default)  cuda/latest(@)
        modulecmd.tcl python display <modulefile>...
            # a 67-dash rule, "<modulefile>:", blank, then "prepend-path\\tPATH /root/bin" per command;
            # a Tcl error in one modulefile prints "Module ERROR: ..." in its block, the others go on
        modulecmd.tcl python load cuda/13.1  # os.environ['PATH'] = '...'"""
    if shutil.which("apt-get") is None or shutil.which("dpkg") is None:
        _give_up("environment-modules: no apt-get/dpkg to fetch Debian's package")
    if shutil.which("tclsh8.6") is None and shutil.which("tclsh") is None:
        _give_up("environment-modules: no tclsh (Debian: apt-get install tcl)")

    def build(tmp: Path):
        proc = _run(["apt-get", "download", "environment-modules"], cwd=tmp)
        if proc.returncode != 0:  # a fresh machine has no package lists yet
            _run(["apt-get", "update", "-qq"], timeout=600)
            proc = _run(["apt-get", "download", "environment-modules"], cwd=tmp)
        debs = sorted(tmp.glob("environment-modules_*.deb"))
        if proc.returncode != 0 or not debs:
            raise KitUnavailable("apt-get download environment-modules: " + proc.stderr.strip()[-300:])
        _run(["dpkg", "-x", debs[0], tmp / "x"]).check_returncode()
        debs[0].unlink()

    try:
        tree = _cached("envmodules", build)
    except (KitUnavailable, subprocess.SubprocessError, OSError) as exc:
        _give_up(f"environment-modules unavailable: {exc}")
    found = [p for p in sorted(tree.glob("x/usr/lib/**/modulecmd.tcl"))
             if p.is_file() and not p.is_symlink()] + sorted(tree.glob("x/**/modulecmd.tcl"))
    if not found:
        _give_up(f"environment-modules: no modulecmd.tcl in {tree}")
    version = _run([found[0], "python", "--version"])
    if "Modules Release" not in version.stderr:
        _give_up(f"environment-modules: {found[0]} does not run: {version.stderr.strip()[-300:]}")
    return found[0]
