"""explain's driver layer, confirmed or refuted on hand-made host states under CUDASWITCH_ROOT
(each mirrors a real one, named in its test), and `doctor` saying the same through the same
checks."""

import json
import os
import sys

from tests.verify_support import build_libcuda, by_id, write_proc_version

NVIDIA_SMI_FAILED = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that "
                     "the latest NVIDIA driver is installed and running.")
NVML_MISMATCH = "Failed to initialize NVML: Driver/library version mismatch"
BUSY = "RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable"
NO_DEVICE = "RuntimeError: CUDA error: no CUDA-capable device is detected"
CUDNN_MISSING = ("Could not load library libcudnn_cnn_infer.so.8. Error: libcudnn_cnn_infer.so.8: cannot open "
                 "shared object file: No such file or directory")


def explained(host, text, env=None):
    """{check id: check} of the first matched cause."""
    proc = host.run("explain", text, "--json", env=env, timeout=300)
    first = json.loads(proc.stdout)["matches"][0]
    return first["id"], {c["id"]: c for c in first["checks"]}


def nvidia_gpu_on_pci(host):
    """sysfs of a box with an RTX 3090 at 0000:01:00.0 (vendor 0x10de, VGA class)."""
    device = host.path("/sys/bus/pci/devices/0000:01:00.0")
    device.mkdir(parents=True)
    (device / "vendor").write_text("0x10de\n")
    (device / "class").write_text("0x030000\n")


def proc_modules(host, *names):
    path = host.path("/proc/modules")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join("%s 16384 0 - Live 0x0000000000000000\n" % n for n in names))


def test_no_kernel_module_nouveau_or_none(host):
    """A fresh Ubuntu install with nouveau bound to the GPU; then the same box after a kernel update
    whose DKMS build failed (no module at all); then the driver loaded."""
    nvidia_gpu_on_pci(host)
    proc_modules(host, "nouveau", "drm_kms_helper", "ext4")
    rule, checks = explained(host, NVIDIA_SMI_FAILED)
    assert rule == "driver_not_loaded" and checks["driver.kernel_module"]["level"] == "error"
    assert "nouveau" in checks["driver.kernel_module"]["message"]
    doctor = json.loads(host.run("doctor", "--json", timeout=300).stdout)
    [same] = by_id(doctor, "driver.kernel_module")
    assert same["message"] == checks["driver.kernel_module"]["message"] and same["layer"] == "driver"
    proc_modules(host, "drm_kms_helper", "ext4")
    _, checks = explained(host, NVIDIA_SMI_FAILED)
    assert checks["driver.kernel_module"]["level"] == "error" and "0000:01:00.0" in checks["driver.kernel_module"][
        "message"]
    proc_modules(host, "nvidia_uvm", "nvidia", "ext4")  # loaded; /proc/driver/nvidia/version unread
    _, checks = explained(host, NVIDIA_SMI_FAILED)
    assert checks["driver.kernel_module"]["level"] == "ok", checks
    write_proc_version(host.root, "550.54.15")
    _, checks = explained(host, NVIDIA_SMI_FAILED)
    assert checks["driver.kernel_module"]["level"] == "ok", checks  # refuted: the module is there


def test_module_and_libraries_of_two_releases(host):
    """`apt upgrade` took the libraries to 550.90.07 while the running kernel module stays 550.54.15
    until the reboot."""
    write_proc_version(host.root, "550.54.15")
    libdir = host.path("/usr/lib/x86_64-linux-gnu")
    libdir.mkdir(parents=True)
    (libdir / "libcuda.so.550.90.07").write_bytes(b"\x7fELF")
    (libdir / "libnvidia-ml.so.550.90.07").write_bytes(b"\x7fELF")
    rule, checks = explained(host, NVML_MISMATCH)
    mismatch = checks["driver.release_match"]
    assert rule == "nvml_version_mismatch" and mismatch["level"] == "error"
    assert "550.54.15" in mismatch["message"] and "550.90.07" in mismatch["message"] and "reboot" in mismatch["hint"]
    for name in ("libcuda.so.550.90.07", "libnvidia-ml.so.550.90.07"):
        os.rename(libdir / name, libdir / name.replace("550.90.07", "550.54.15"))  # after the reboot
    _, checks = explained(host, NVML_MISMATCH)
    assert checks["driver.release_match"]["level"] == "ok"


def fake_nvidia_smi(tmp_path, row):
    """An nvidia-smi stand-in answering the compute-mode query as a real one does for one GPU."""
    bindir = tmp_path / "smi-bin"
    bindir.mkdir(exist_ok=True)
    smi = bindir / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho '%s'\n" % row)
    smi.chmod(0o755)
    return {"PATH": "%s:/usr/bin:/bin" % bindir}


def test_busy_compute_mode_and_mig(host, tmp_path):
    """A shared lab server whose admin set the GPU to Exclusive_Process; an A100 split by MIG; a
    GPU in Default mode (refuted); no nvidia-smi at all (cannot tell)."""
    rule, checks = explained(host, BUSY, fake_nvidia_smi(tmp_path, "0, Exclusive_Process, [N/A]"))
    assert rule == "device_busy" and checks["gpu.compute_mode"]["level"] == "warning"
    assert "Exclusive_Process" in checks["gpu.compute_mode"]["message"]
    _, checks = explained(host, BUSY, fake_nvidia_smi(tmp_path, "0, Default, Enabled"))
    assert checks["gpu.compute_mode"]["level"] == "warning" and "MIG" in checks["gpu.compute_mode"]["message"]
    _, checks = explained(host, BUSY, fake_nvidia_smi(tmp_path, "0, Default, Disabled"))
    assert checks["gpu.compute_mode"]["level"] == "ok"
    _, checks = explained(host, BUSY, {"PATH": "/usr/bin:/bin"})
    assert checks["gpu.compute_mode"]["level"] == "info" and "cannot check" in checks["gpu.compute_mode"]["message"]


def test_no_device_with_cuda_visible_devices(host, tmp_path):
    """A job script that exported CUDA_VISIBLE_DEVICES="" (or -1, or a Slurm index from another
    node) on a two-GPU box, and the same box with it unset."""
    libcuda = str(build_libcuda(tmp_path, 12080, init_rc=0, gpus=["sm_86", "sm_86"]))
    for value, level in (("", "error"), ("-1", "error"), ("3", "error"), ("0,1", "ok")):
        rule, checks = explained(host, NO_DEVICE, {"CUDASWITCH_LIBCUDA": libcuda, "CUDA_VISIBLE_DEVICES": value})
        assert rule == "no_device" and checks["env.visible_devices"]["level"] == level, (value, checks)
    _, checks = explained(host, NO_DEVICE, {"CUDASWITCH_LIBCUDA": libcuda})
    assert checks["env.visible_devices"]["level"] == "ok" and "2 found" in checks["env.visible_devices"]["message"]


def test_cudnn_cannot_open_is_missing_not_two_copies(host, tmp_path):
    """torch 2.0's cuDNN 8 split library not found: the cause is a missing library, and the check
    names where copies are (here: one in a venv's nvidia-cudnn wheel, off the loader path)."""
    rule, checks = explained(host, CUDNN_MISSING, {"PATH": "/usr/bin:/bin"})
    loader = checks["env.loader_path"]
    assert rule == "cudnn_missing" and loader["level"] == "warning" and "NOT on the loader path" in loader["message"]
    venv, real = tmp_path / "venv", os.path.realpath(sys.executable)
    site = venv / "lib" / ("python%d.%d" % sys.version_info[:2]) / "site-packages"
    (site / "nvidia" / "cudnn" / "lib").mkdir(parents=True)
    (site / "nvidia" / "cudnn" / "lib" / "libcudnn_cnn_infer.so.8").write_bytes(b"\x7fELF")
    (venv / "bin").mkdir()
    os.symlink(real, venv / "bin" / "python3")  # a venv as `python -m venv --without-pip` lays it out
    (venv / "pyvenv.cfg").write_text("home = %s\ninclude-system-site-packages = false\n" % os.path.dirname(real))
    _, checks = explained(host, CUDNN_MISSING, {"PATH": "%s/bin:/usr/bin:/bin" % venv})
    loader = checks["env.loader_path"]
    assert loader["facts"]["wheels"] and "nvidia/cudnn/lib" in loader["hint"], loader
