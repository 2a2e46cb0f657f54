"""Sanity checks of the real-toolkit fixtures in tests/kits.py (first run downloads ~630 MB)."""
import json
import os
import subprocess

import pytest

from tests import kits

KERNEL = "__global__ void k(float *x) { x[threadIdx.x] *= 2.0f; }\n" \
         "int main() { float *d; cudaMalloc(&d, 4); k<<<1, 1>>>(d); return 0; }\n"


def run(*cmd, **kw):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=300, **kw)


def compiles(nvcc, tmp_path, *args):
    (tmp_path / "k.cu").write_text(KERNEL)
    p = run(nvcc, *args, "k.cu", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    return p


@pytest.mark.parametrize("minor", ["13.0", "13.1"])
def test_cuda13_nvcc_reports_its_release(minor):
    out = run(kits.cuda13(minor) / "bin" / "nvcc", "--version").stdout
    assert f"release {minor}, V{minor}." in out


def test_cuda13_wheel_tree_compiles_but_needs_lib64_to_link(tmp_path):
    kits.require("gcc")
    nvcc = kits.cuda13("13.1") / "bin" / "nvcc"
    compiles(nvcc, tmp_path, "-c", "-o", "k.o")
    p = run(nvcc, "k.cu", "-o", "k", cwd=tmp_path)  # documented in kits.py: no lib64 in wheels
    assert p.returncode != 0 and "cudart_static" in p.stderr


def test_cache_is_reused():
    assert kits.cuda13("13.1") == kits.cuda13("13.1")
    assert kits.cuda13("13.1").is_relative_to(kits.cache_dir())


def test_install_classic_is_a_working_hardlinked_toolkit(tmp_path):
    kits.require("gcc")
    src = kits.cuda13("13.1")
    root = kits.install_classic(src, tmp_path / "cuda-13.1", "13.1")
    vj = json.loads((root / "version.json").read_text())
    comps = kits.dist_versions(src.parent.parent)
    assert vj["cuda"] == {"name": "CUDA SDK", "version": "13.1.0"}
    assert vj["cuda_nvcc"]["version"] == comps["nvidia-cuda-nvcc"]
    assert vj["cuda_cudart"] == {"name": "CUDA Runtime (cudart)",
                                 "version": comps["nvidia-cuda-runtime"]}
    assert os.path.samefile(root / "bin" / "nvcc", src / "bin" / "nvcc")  # hardlink, no copy
    assert (root / "lib64" / "libcudart.so.13").resolve().name == \
        f"libcudart.so.{comps['nvidia-cuda-runtime']}"
    compiles(root / "bin" / "nvcc", tmp_path, "-o", "k")
    compiles(root / "bin" / "nvcc", tmp_path, "-cudart", "shared", "-o", "k2")
    kits.detach(root / "bin" / "nvcc.profile").chmod(0o600)  # a test may now change it...
    assert not os.path.samefile(root / "bin" / "nvcc.profile", src / "bin" / "nvcc.profile")
    assert (src / "bin" / "nvcc.profile").stat().st_mode & 0o777 == 0o644  # ...cache untouched


def test_install_classic_without_version_json(tmp_path):
    root = kits.install_classic(kits.cuda13("13.0"), tmp_path / "c", "13.0", version_json=False)
    assert not (root / "version.json").exists() and (root / "bin" / "nvcc").exists()


def test_classic_runtime12_has_no_nvcc(tmp_path):
    root = kits.install_classic_runtime12(tmp_path / "cuda-12.4")
    assert not (root / "bin" / "nvcc").exists()
    assert "release 12.4," in run(root / "bin" / "ptxas", "--version").stdout
    assert (root / "lib64" / "libcudart.so.12").resolve().is_file()
    assert (root / "include" / "cuda_runtime.h").is_file()
    vj = json.loads((root / "version.json").read_text())
    assert vj["cuda_cudart"]["version"].startswith("12.4.")
    assert vj["cuda_nvcc"]["version"].startswith("12.4.")


def test_conda_nvcc13_env(tmp_path):
    kits.require("gcc")
    env = kits.conda_env(tmp_path / "env", "cuda-nvcc-13")
    rec = json.loads((env / "conda-meta" / "cuda-nvcc-13.0.88-0.json").read_text())
    assert (rec["name"], rec["version"], rec["build"]) == ("cuda-nvcc", "13.0.88", "0")
    assert (env / "conda-meta" / "cuda-version-13.0-3.json").is_file()
    assert (env / "targets/x86_64-linux/include/cuda_runtime.h").is_file()
    assert (env / "lib" / "libcudart.so.13").resolve().is_file()
    assert run(env / "bin" / "python").stdout.strip() == "conda-python"
    assert "release 13.0," in run(env / "bin" / "nvcc", "--version").stdout
    compiles(env / "bin" / "nvcc", tmp_path, "-o", "k")


def test_conda_cudatoolkit11_env(tmp_path):
    env = kits.conda_env(tmp_path / "env", "cudatoolkit-11")
    assert (env / "conda-meta" / "cudatoolkit-11.8.0-h6a678d5_0.json").is_file()
    assert (env / "lib" / "libcudart.so.11.0").resolve().is_file()
    assert not (env / "bin" / "nvcc").exists()


def test_venv_with_wheels(tmp_path):
    venv = kits.venv_with_wheels(tmp_path / "venv", "13.0")
    nvcc = kits.site_packages(venv) / "nvidia" / "cu13" / "bin" / "nvcc"
    assert "release 13.0," in run(nvcc, "--version").stdout
    assert (venv / "bin" / "python").exists()


def test_lmod_load_and_spider(tmp_path):
    kits.require("lmod")
    mp = tmp_path / "modulefiles"
    root = tmp_path / "cuda 13.1's root"  # a space and a quote must survive the modulefile
    kits.write_cuda_module(mp, "13.1", root)
    env = kits.lmod_env(mp, base=os.environ)
    load = run(env["LMOD_CMD"], "bash", "load", "cuda/13.1", env=env)
    assert load.returncode == 0 and "export PATH;" in load.stdout, load.stderr
    shell = 'eval "$("$LMOD_CMD" bash load cuda/13.1)" && printf "%s\\n" "$CUDA_HOME" "$PATH"'
    home, path = run("bash", "-c", shell, env=env).stdout.splitlines()
    assert home == str(root) and path.startswith(f"{root}/bin:")
    spider = run(env["LMOD_DIR"] + "/spider", "-o", "spider-json", mp, env=env)
    entry = json.loads(spider.stdout)["cuda"][str(mp / "cuda" / "13.1.lua")]
    assert entry["fullName"] == "cuda/13.1" and f"{root}/bin" in entry["pathA"]


def test_require_skips_locally_and_fails_in_ci(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception):
        kits.require("no-such-tool-xyz")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception):
        kits.require("no-such-tool-xyz")
