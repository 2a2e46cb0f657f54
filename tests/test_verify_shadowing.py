"""Library shadowing: mirrors torch 2.4+cu124 from PyPI (its nvidia-nvjitlink-cu12 12.4.127 and
nvidia-cusparse-cu12 wheels) used after switching to a CUDA 12.1 system toolkit whose lib64 holds
libnvJitLink.so.12 -> 12.1.105: LD_LIBRARY_PATH wins over torch's RUNPATH, and the wheel's
libcusparse then fails with `undefined symbol: __nvJitLinkAddData_12_4`. The libraries are
hand-made copies under the real sonames and file names; the venv and the 12.4 runtime tree are real."""

import os
import subprocess

from tests import kits
from tests.verify_support import CU124_TORCH, by_id, report, venv_with_torch_package

STAND_IN_TORCH = CU124_TORCH


def shared_object(path):
    gcc = kits.require("gcc")
    src = path.with_suffix(".c")
    src.write_text("int stand_in(void) { return 0; }\n")
    subprocess.run([gcc, "-shared", "-fPIC", "-o", str(path), str(src)], check=True, timeout=60)
    src.unlink()


def wheel(site, package, dist, version, soname):
    lib = site / "nvidia" / package / "lib"
    lib.mkdir(parents=True, exist_ok=True)
    shared_object(lib / soname)
    info = site / ("%s-%s.dist-info" % (dist.replace("-", "_"), version))
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (dist, version))
    (info / "INSTALLER").write_text("pip\n")
    return lib / soname


def shadowed(host, tmp_path):
    """(toolkit lib dir, venv python, the venv's nvjitlink): a 12.4 toolkit whose lib holds
    nvJitLink 12.1.105, and a venv whose torch came with the cu124 wheels' 12.4.127."""
    lib64 = kits.install_classic_runtime12(host.path("/usr/local/cuda-12.4")) / "targets/x86_64-linux/lib"
    shared_object(lib64 / "libnvJitLink.so.12.1.105")
    os.symlink("libnvJitLink.so.12.1.105", lib64 / "libnvJitLink.so.12")
    python = venv_with_torch_package(tmp_path, "venv", {"__init__.py": STAND_IN_TORCH})
    jit = wheel(kits.site_packages(tmp_path / "venv"), "nvjitlink", "nvidia-nvjitlink-cu12", "12.4.127",
                "libnvJitLink.so.12")
    return lib64, python, jit


def test_older_toolkit_copy_shadowing_torchs_is_an_error_naming_both(host, tmp_path):
    lib64, python, jit = shadowed(host, tmp_path)
    site = kits.site_packages(tmp_path / "venv")
    wheel(site, "cusparse", "nvidia-cusparse-cu12", "12.3.1.170", "libcusparse.so.12")
    proc = host.run("verify", "12.4", "--python", python, "--json", timeout=300)
    [item] = by_id(report(proc), "env.library_shadowing")
    assert item["level"] == "error" and proc.returncode == 1
    assert "libnvJitLink.so.12 12.1.105" in item["message"] and "12.4.127" in item["message"]
    assert str(jit) in item["message"] and os.path.realpath(lib64 / "libnvJitLink.so.12.1.105") in item["message"]

    (lib64 / "libnvJitLink.so.12").unlink()  # a toolkit copy newer than the wheel's is no finding
    shared_object(lib64 / "libnvJitLink.so.12.6.77")
    os.symlink("libnvJitLink.so.12.6.77", lib64 / "libnvJitLink.so.12")
    proc = host.run("verify", "12.4", "--python", python, "--json", timeout=300)
    [item] = by_id(report(proc), "env.library_shadowing")
    assert item["level"] == "ok"


def test_loader_path_setting_avoids_it(host, tmp_path):
    """The same venv and toolkit with `loader_path = false`: the switch leaves LD_LIBRARY_PATH alone."""
    import json

    _, python, _ = shadowed(host, tmp_path)
    root = host.path("/usr/local/cuda-12.4")
    [before] = by_id(report(host.run("verify", "12.4", "--python", python, "--json", timeout=300)),
                     "env.library_shadowing")
    assert before["level"] == "error" and "loader_path = false" in before["hint"]
    (host.work / "config").mkdir(parents=True, exist_ok=True)
    (host.work / "config" / "config.toml").write_text("loader_path = false\n")
    [after] = by_id(report(host.run("verify", "12.4", "--python", python, "--json", timeout=300)),
                    "env.library_shadowing")
    assert after["level"] == "ok"
    switched = json.loads(host.run("use", "12.4", "--shell", "json", "--no-verify", check=True).stdout)
    assert "LD_LIBRARY_PATH" not in switched["set"] and switched["set"]["CUDA_HOME"] == str(root)
    (host.work / "config" / "config.toml").write_text('verdict = "sometimes"\n')  # a bad value: one line
    proc = host.run("verify", "12.4", "--python", python, "--json", timeout=300)
    assert proc.returncode != 0 and "verdict must be one of all, problems, off" in proc.stderr
