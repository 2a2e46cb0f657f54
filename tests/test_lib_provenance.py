"""Which file each CUDA library of the real torch 2.14.1+cu130 comes from, with a gcc-built
libnccl.so.2 (SONAME libnccl.so.2, none of NCCL's functions) as the foreign copy users meet: on
LD_LIBRARY_PATH the wheel's DT_RPATH wins and torch imports (no alarm); in LD_PRELOAD it replaces
torch's own, torch fails with `undefined symbol: nccl...`, and doctor and explain name that file."""

import os
import subprocess

import pytest

from tests import kits
from tests.verify_support import by_id, report, torch_cuda_venv


@pytest.fixture(scope="module")
def nccl_host(tmp_path_factory):
    from tests.conftest import Host

    base = tmp_path_factory.mktemp("provenance")
    host = Host(base / "root", base / "work")
    host.python = str(torch_cuda_venv() / "bin" / "python")
    lib = host.path("/opt/nccl/lib")
    lib.mkdir(parents=True)
    (base / "nccl.c").write_text("int not_nccl(void) { return 0; }\n")
    subprocess.run([kits.require("gcc"), "-shared", "-fPIC", "-Wl,-soname,libnccl.so.2", "-o",
                    str(lib / "libnccl.so.2"), str(base / "nccl.c")], check=True)
    host.nccl = str(lib / "libnccl.so.2")
    return host


def doctor(host, env):
    return host.run("doctor", "--python", host.python, "--timeout", "300", "--json", env=env, timeout=600)


def test_a_copy_on_ld_library_path_loses_to_torchs_rpath(nccl_host):
    out = report(doctor(nccl_host, {"LD_LIBRARY_PATH": str(nccl_host.path("/opt/nccl/lib")), "NCCL_DEBUG": "INFO"}))
    assert out["torch"]["torch"].startswith("2.14.1")  # it imported: the loader gave it its own NCCL
    [prov] = by_id(out, "libs.provenance")
    assert prov["level"] == "ok", prov["message"]
    libs = {lib["soname"]: lib for lib in prov["facts"]["libraries"]}
    nccl = libs["libnccl.so.2"]
    assert nccl["why"].startswith("already loaded") and nccl["path"].endswith("/nvidia/nccl/lib/libnccl.so.2")
    assert nccl["version"] == nccl["pinned"] == "2.30.7" and nccl["pinned_wheel"] == "nvidia-nccl-cu13"
    # the prediction is checked against what the process mapped, for every library it mapped
    mapped = [lib for lib in libs.values() if lib["mapped"]]
    assert len(mapped) >= 10 and all(lib["mapped"] == lib["path"] for lib in mapped)
    assert {"libcudart.so.13", "libcublasLt.so.13", "libcudnn.so.9", "libnvJitLink.so.13"} <= set(libs)
    assert libs["libnvJitLink.so.13"]["needed_by"] == "libcusparse.so.12"
    assert all(c["level"] != "error" for c in out["checks"] if "nccl" in c["message"].lower())
    [nccl] = by_id(out, "nccl.version")  # no GPU here: the version is read from the library itself
    assert nccl["level"] == "ok" and nccl["facts"]["version"] == "2.30.7"
    assert nccl["facts"]["source"] == "the library file"
    assert nccl["facts"]["available"] is True and nccl["facts"]["variables"] == {"NCCL_DEBUG": "INFO"}
    assert nccl["facts"]["others"] == [nccl_host.nccl] and nccl["facts"]["pinned"] == "2.30.7"


def test_older_toolkit_copies_on_ld_library_path_are_not_what_torch_loads(nccl_host):
    """A CUDA 13.0-era lib64 on LD_LIBRARY_PATH (cuBLAS and nvJitLink 13.0.1, older than the wheels'):
    libtorch_cuda's DT_RPATH outranks it for cuBLAS, and torch's __init__ loads its own nvJitLink
    before libcusparse (DT_RUNPATH only) would look, so neither shadows anything; the maps agree."""
    lib = nccl_host.path("/opt/cuda-13.0/lib64")
    lib.mkdir(parents=True)
    for name in ("libcublas.so.13", "libnvJitLink.so.13"):
        subprocess.run([kits.require("gcc"), "-shared", "-fPIC", "-o", str(lib / (name + ".0.1")), "-x", "c",
                        "/dev/null"], check=True)
        (lib / name).symlink_to(name + ".0.1")
    out = report(doctor(nccl_host, {"LD_LIBRARY_PATH": str(lib)}))
    assert out["torch"]["torch"].startswith("2.14.1")
    [prov] = by_id(out, "libs.provenance")
    assert prov["level"] == "ok", prov["message"]
    libs = {lib["soname"]: lib for lib in prov["facts"]["libraries"]}
    assert libs["libnvJitLink.so.13"]["why"].startswith("already loaded")
    assert all(row["mapped"] == row["path"] for row in libs.values() if row["mapped"])
    [shadow] = by_id(out, "env.library_shadowing")
    assert shadow["level"] == "ok", shadow["message"]


def test_a_preloaded_copy_breaks_the_import_and_is_named(nccl_host):
    env = {"LD_PRELOAD": nccl_host.nccl}
    proc = doctor(nccl_host, env)
    out = report(proc)
    assert not out["torch"].get("torch") and "undefined symbol: nccl" in out["torch"]["torch_error"]
    [prov] = by_id(out, "libs.provenance")
    assert prov["level"] == "error" and proc.returncode != 0
    assert "libnccl.so.2 loads %s (LD_PRELOAD" % nccl_host.nccl in prov["message"]
    assert "/nvidia/nccl/lib/libnccl.so.2 (2.30.7)" in prov["message"] and nccl_host.nccl in prov["hint"]
    [nccl] = by_id(out, "nccl.version")
    assert nccl["level"] == "warning" and "%s (LD_PRELOAD), but torch pins nvidia-nccl-cu13==2.30.7" % nccl_host.nccl \
        in nccl["message"] and "take %s off LD_PRELOAD" % nccl_host.nccl in nccl["hint"]
    text = out["torch"]["torch_error"].split(": ", 1)[1]
    explained = report(nccl_host.run("explain", text, "--python", nccl_host.python, "--json", env=env, timeout=600))
    [match] = [m for m in explained["matches"] if m["id"] == "nccl_symbol"]
    named = [c for c in match["checks"] if c["level"] == "error" and nccl_host.nccl in c["message"]]
    assert {c["id"] for c in named} == {"nccl.foreign", "libs.provenance"}


# How torch/__init__.py preloads its wheels' libraries once libtorch_global_deps has loaded, by
# release (read from the PyPI wheels' own __init__.py): 2.6-2.9 load nvrtc and nvJitLink by name,
# 2.10-2.11 call _preload_cuda_deps() (its whole list, stopping at the first missing one), 2.12 on
# _preload_cuda_deps(required=False). An H200 machine with torch 2.11.0+cu130 and CUDA 13.0's lib64
# on LD_LIBRARY_PATH was reported as "a cudaswitch bug": its nvJitLink came from the wheel.
OLDER_PRELOADS = {
    "2.11": "_preload_cuda_deps()",
    "2.9": '_preload_cuda_lib("cuda_nvrtc", "libnvrtc.so.*[0-9]")\n'
           '            _preload_cuda_lib("nvjitlink", "libnvJitLink.so.*[0-9]")',
}


def reshaped_torch_venv(base, form):
    """A venv of the real torch 2.14.1+cu130 whose __init__.py preloads as an older release does:
    every other file is a link to the real one."""
    real = torch_cuda_venv()
    venv = base / ("torch-" + form)
    subprocess.run([str(real / "bin" / "python"), "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    [real_site] = real.glob("lib/python3*/site-packages")
    [site] = venv.glob("lib/python3*/site-packages")
    for entry in real_site.iterdir():
        if entry.name != "torch":
            (site / entry.name).symlink_to(entry)
    (site / "torch").mkdir()
    for entry in (real_site / "torch").iterdir():
        if entry.name != "__init__.py":
            (site / "torch" / entry.name).symlink_to(entry)
    text = (real_site / "torch" / "__init__.py").read_text()
    assert text.count("_preload_cuda_deps(required=False)") == 1
    (site / "torch" / "__init__.py").write_text(text.replace("_preload_cuda_deps(required=False)",
                                                             OLDER_PRELOADS[form]))
    return venv


@pytest.mark.parametrize("form", sorted(OLDER_PRELOADS))
def test_what_an_older_torch_preloads_is_what_it_maps(nccl_host, tmp_path, form):
    lib = tmp_path / "cuda-13.0" / "lib64"  # an older toolkit's nvJitLink on LD_LIBRARY_PATH
    lib.mkdir(parents=True)
    subprocess.run([kits.require("gcc"), "-shared", "-fPIC", "-o", str(lib / "libnvJitLink.so.13"), "-x", "c",
                    "/dev/null"], check=True)
    python = reshaped_torch_venv(tmp_path, form) / "bin" / "python"
    out = report(nccl_host.run("doctor", "--python", str(python), "--timeout", "300", "--json",
                               env={"LD_LIBRARY_PATH": str(lib)}, timeout=600))
    assert out["torch"]["torch"].startswith("2.14.1")
    [prov] = by_id(out, "libs.provenance")
    assert prov["level"] == "ok", prov["message"]
    libs = {row["soname"]: row for row in prov["facts"]["libraries"]}
    nvjitlink = libs["libnvJitLink.so.13"]
    assert nvjitlink["why"].startswith("already loaded") and "/nvidia/cu13/lib/" in nvjitlink["path"]
    assert nvjitlink["mapped"] and os.path.realpath(nvjitlink["mapped"]) == os.path.realpath(nvjitlink["path"])
    # 2.9 loads nothing else by name: cuBLAS comes through libtorch_cuda's DT_RPATH, as the maps say
    assert libs["libcublas.so.13"]["why"].startswith("already loaded" if form == "2.11" else "DT_RPATH")
