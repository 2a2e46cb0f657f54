"""WSL through the real `cudaswitch doctor`, `verify` and `explain`, on hand-made roots
under CUDASWITCH_ROOT (/proc/version, /dev/dxg, /usr/lib/wsl/lib, dpkg's file lists as the real
hosts named in each test have them) and a gcc-built libcuda standing in for the Windows driver's
(CUDASWITCH_LIBCUDA, as the driver tests select one)."""

import json

import pytest

from tests import kits
from tests.verify_support import build_libcuda

WSL2_KERNEL = ("Linux version 5.15.153.1-microsoft-standard-WSL2 (root@941d701f84f1) (gcc (GCC) 11.2.0, GNU ld "
               "(GNU Binutils) 2.37) #1 SMP Fri Mar 29 23:14:13 UTC 2024\n")
WSL1_KERNEL = ("Linux version 4.4.0-19041-Microsoft (Microsoft@Microsoft.com) (gcc version 5.4.0 (GCC) ) "
               "#1237-Microsoft Sat Sep 11 14:32:00 PST 2021\n")
LIBCUDA_MISSING = "ImportError: libcuda.so.1: cannot open shared object file: No such file or directory"


def wsl2_root(host, windows_libcuda=True):
    """Ubuntu 22.04 under WSL 2 on Windows 11: /dev/dxg, and the Windows driver's libraries that
    Windows mounts at /usr/lib/wsl/lib (named by /etc/ld.so.conf.d/ld.wsl.conf)."""
    host.path("/proc").mkdir(parents=True, exist_ok=True)
    host.path("/proc/version").write_text(WSL2_KERNEL)
    host.path("/dev").mkdir(parents=True, exist_ok=True)
    host.path("/dev/dxg").write_text("")
    lib = host.path("/usr/lib/wsl/lib")
    lib.mkdir(parents=True)
    if windows_libcuda:
        (lib / "libcuda.so.1").write_bytes(b"\x7fELF")
    host.path("/etc/ld.so.conf.d").mkdir(parents=True)
    host.path("/etc/ld.so.conf").write_text("include /etc/ld.so.conf.d/*.conf\n")
    host.path("/etc/ld.so.conf.d/ld.wsl.conf").write_text("/usr/lib/wsl/lib\n")


def linux_driver_inside(host):
    """The same distribution after `sudo apt install cuda` pulled in the Linux driver 535."""
    libdir = host.path("/usr/lib/x86_64-linux-gnu")
    libdir.mkdir(parents=True)
    (libdir / "libcuda.so.535.183.01").write_bytes(b"\x7fELF")
    (libdir / "libcuda.so.1").symlink_to("libcuda.so.535.183.01")
    info = host.path("/var/lib/dpkg/info")
    info.mkdir(parents=True)
    (info / "libnvidia-compute-535:amd64.list").write_text(
        "/.\n/usr\n/usr/lib/x86_64-linux-gnu/libcuda.so.535.183.01\n/usr/lib/x86_64-linux-gnu/libcuda.so.1\n")
    return "/usr/lib/x86_64-linux-gnu/libcuda.so.1"


def checks(host, *args, env=None):
    proc = host.run(*args, "--json", env=env, timeout=300)
    assert proc.stdout.strip(), proc.stderr
    data = json.loads(proc.stdout)
    found = data["checks"] if "checks" in data else [c for m in data["matches"] for c in m["checks"]]
    return {c["id"]: c for c in found}


@pytest.fixture
def windows_driver(host, tmp_path):
    """A libcuda answering as the Windows driver does in WSL: CUDA 12.2, one RTX 3090."""
    return {"CUDASWITCH_LIBCUDA": str(build_libcuda(tmp_path / "libs", 12020, init_rc=0, gpus=["sm_86"]))}


def test_wsl2_windows_driver_serves_libcuda(host, windows_driver):
    """The WSL 2 workstation as NVIDIA's CUDA-on-WSL guide sets it up: nothing installed inside."""
    wsl2_root(host)
    got = checks(host, "doctor", env=windows_driver)
    assert got["driver.wsl"]["level"] == "ok" and "/usr/lib/wsl/lib/libcuda.so.1" in got["driver.wsl"]["message"]
    assert "CUDA 12.2" in got["driver.wsl"]["message"]
    assert "under WSL 2" in got["driver.present"]["message"]
    assert got["driver.kernel_module"]["level"] == "info"  # no Linux module there, and none expected


def test_linux_driver_inside_wsl_is_named(host, windows_driver):
    """The same workstation after `apt install cuda` (which pulls cuda-drivers): the Linux driver's
    libcuda in /usr/lib/x86_64-linux-gnu is named with the package to purge, by doctor and explain."""
    wsl2_root(host)
    bad = linux_driver_inside(host)
    found = checks(host, "doctor", env=windows_driver)["driver.wsl"]
    assert found["level"] == "error" and bad in found["message"] and "libnvidia-compute-535" in found["message"]
    assert "sudo apt-get purge libnvidia-compute-535" in found["hint"]
    said = checks(host, "explain", LIBCUDA_MISSING, env=windows_driver)["driver.wsl"]
    assert said["level"] == "error" and bad in said["message"]


def test_under_wsl_verdicts_use_libcuda_cuda_not_linux_minimums(host, windows_driver):
    """WSL 2 with a Windows driver whose libcuda says CUDA 12.2, and CUDA 13.0 installed inside
    (cuda-toolkit-13-0): the driver is too old, and the fix is the Windows driver, not a Linux
    release from the minimum-driver table."""
    wsl2_root(host)
    kits.install_classic(kits.cuda13("13.0"), host.path("/usr/local/cuda-13.0"), "13.0")
    verified = checks(host, "verify", "13.0", env=windows_driver)
    got = verified["driver.supports_toolkit"]
    assert verified["driver.wsl"]["level"] == "ok"
    assert got["level"] == "error" and "CUDA 12.2" in got["message"]
    assert "Windows" in got["hint"] and got["facts"]["needs_driver"] is None
    assert "580" not in got["hint"]


def test_wsl1_has_no_gpu(host):
    """Ubuntu under WSL 1 (Windows 10 build 19041): no /dev/dxg, no /usr/lib/wsl."""
    host.path("/proc").mkdir(parents=True)
    host.path("/proc/version").write_text(WSL1_KERNEL)
    found = checks(host, "doctor")["driver.wsl"]
    assert found["level"] == "error" and "WSL 1 has no GPU" in found["message"] and "--set-version" in found["hint"]


def test_wsl2_without_the_windows_libcuda(host):
    """WSL 2 on a Windows without an NVIDIA driver: /dev/dxg but no libcuda in /usr/lib/wsl/lib."""
    wsl2_root(host, windows_libcuda=False)
    found = checks(host, "explain", LIBCUDA_MISSING)["driver.wsl"]
    assert found["level"] == "error" and "Windows" in found["hint"]


def test_not_wsl_says_nothing_in_doctor(host):
    """A plain Linux server (a non-Microsoft kernel in /proc/version): doctor has no WSL line,
    explain says why it does not apply."""
    host.path("/proc").mkdir(parents=True)
    host.path("/proc/version").write_text("Linux version 6.8.0-45-generic (buildd@lcy02-amd64-115) #45-Ubuntu\n")
    assert "driver.wsl" not in checks(host, "doctor")
    assert checks(host, "explain", LIBCUDA_MISSING)["driver.wsl"]["level"] == "info"
