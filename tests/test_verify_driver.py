"""driver verdicts against a real shared library exporting cuInit/cuDriverGetVersion
(built here with gcc, selected with CUDASWITCH_LIBCUDA), and /proc/driver/nvidia/version read
under CUDASWITCH_ROOT. The library stands in for the libcuda.so.1 of a driver of each era."""

import pytest

from tests import kits
from tests.verify_support import build_libcuda, by_id, report, venv_with_torch_package, write_proc_version


@pytest.fixture(scope="module")
def drv_host(tmp_path_factory):
    """Real toolkits: a runtime-only 12.4 (what cuda-runtime + ptxas leave) and a full 13.1."""
    from tests.conftest import Host

    base = tmp_path_factory.mktemp("drv")
    host = Host(base / "root", base / "work")
    kits.install_classic_runtime12(host.path("/usr/local/cuda-12.4"))
    kits.install_classic(kits.cuda13("13.1"), host.path("/usr/local/cuda-13.1"), "13.1")
    host.libs = base / "libs"
    return host


def verdict(host, request, version, release=None):
    lib = build_libcuda(host.libs, version)
    if release:
        write_proc_version(host.root, release)
    out = report(host.run("verify", request, "--json", env={"CUDASWITCH_LIBCUDA": str(lib)}))
    [item] = by_id(out, "driver.supports_toolkit")
    return item, out


def test_12_2_driver_runs_12_4_toolkit_through_minor_version_compatibility(drv_host):
    item, out = verdict(drv_host, "12.4", 12020, release="535.129.03")
    assert item["level"] == "ok"
    assert "minor-version compatibility" in item["message"] and "may fail" in item["message"]
    assert item["facts"]["driver_cuda"] == "12.2" and item["facts"]["minor_version_compatibility"] is True
    assert item["facts"]["needs_driver"] == "550.54.14"  # compat.toml driver_minimum row of 12.4, for the hint
    assert out["driver"]["release"] == "535.129.03" and out["driver"]["cuda_source"] == "cuDriverGetVersion"


def test_11_8_driver_cannot_run_12_4_toolkit(drv_host):
    item, _ = verdict(drv_host, "12.4", 11080, release="520.61.05")
    assert item["level"] == "error"
    assert "11.8" in item["message"] and "12.4" in item["message"]
    assert "550.54.14" in item["hint"]


def test_12_x_driver_cannot_run_13_1_toolkit(drv_host):
    item, out = verdict(drv_host, "13.1", 12080, release="570.86.10")
    assert item["level"] == "error" and "12.8" in item["message"] and "13.1" in item["message"]
    proc = drv_host.run("verify", "13.1", env={"CUDASWITCH_LIBCUDA": str(build_libcuda(drv_host.libs, 12080))})
    assert proc.returncode == 1 and "FAIL" in proc.stdout  # an error verdict fails `verify`


def test_newer_driver_is_plainly_ok(drv_host):
    item, _ = verdict(drv_host, "13.1", 13010)
    assert item["level"] == "ok" and "minor-version" not in item["message"]


def test_no_driver_is_a_normal_answer(host):
    """A host (root) with no /proc driver file and no libcuda: an info line, not a crash."""
    kits.install_classic_runtime12(host.path("/usr/local/cuda-12.4"))
    out = report(host.run("verify", "12.4", "--json"))
    [item] = by_id(out, "driver.supports_toolkit")
    assert item["level"] == "info" and "no NVIDIA driver on this host" in item["message"]
    assert out["driver"]["present"] is False


def test_proc_release_alone_gives_the_driver_cuda(host):
    """Auditing an image: only ROOT/proc/driver/nvidia/version; its release maps through
    compat.toml's driver_minimum rows."""
    kits.install_classic_runtime12(host.path("/usr/local/cuda-12.4"))
    write_proc_version(host.root, "535.129.03")
    out = report(host.run("verify", "12.4", "--json"))
    assert out["driver"]["release"] == "535.129.03" and out["driver"]["cuda"] == "12.2"
    [item] = by_id(out, "driver.supports_toolkit")
    assert item["level"] == "ok" and item["facts"]["minor_version_compatibility"] is True


def test_unloadable_override_is_reported(host, tmp_path):
    kits.install_classic_runtime12(host.path("/usr/local/cuda-12.4"))
    out = report(host.run("verify", "12.4", "--json", env={"CUDASWITCH_LIBCUDA": str(tmp_path / "nope.so")}))
    assert any("cannot load" in p for p in out["driver"]["problems"])


CU111_TORCH = '''"""Mirrors torch 1.9+cu111's Python surface (what the probe reads), no GPU."""
__version__ = "1.9.1+cu111"
class version:
    cuda = "11.1"
    hip = None
class cuda:
    get_arch_list = staticmethod(lambda: ["sm_37", "sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86"])
    is_available = staticmethod(lambda: False)
'''


@pytest.mark.parametrize("release,level", [("450.51.05", "error"), ("450.80.02", "ok")])
def test_11_0_driver_runs_cuda_11_1_only_from_the_mvc_floor(drv_host, tmp_path, release, level):
    """An 11.0 driver (cuDriverGetVersion 11000) and a cu111 torch: minor-version compatibility
    needs driver >= 450.80.02 (NV-mvc); the 11.0 GA driver 450.51.05 is below it."""
    py = venv_with_torch_package(tmp_path, "cu111", {"__init__.py": CU111_TORCH})
    write_proc_version(drv_host.root, release)
    env = {"CUDASWITCH_LIBCUDA": str(build_libcuda(drv_host.libs, 11000))}
    out = report(drv_host.run("verify", "13.1", "--python", py, "--json", env=env))
    [item] = by_id(out, "torch.driver")
    assert item["level"] == level and item["facts"]["driver_cuda"] == "11.0"
    assert item["facts"].get("minor_version_compatibility", False) is (level == "ok")
