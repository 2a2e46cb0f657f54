"""Acceptance 1 of the verification issue: the user's real torch, seen through `verify --python`."""

import os
import subprocess
import sys
import time

import pytest

from tests import kits
from tests.verify_support import by_id, report, torch_venv, venv_with_torch_package


@pytest.fixture(scope="module")
def host13(tmp_path_factory):
    """A host holding a real CUDA 13.1 toolkit at /usr/local/cuda-13.1 (NVIDIA's wheels, classic layout)."""
    from tests.conftest import Host

    base = tmp_path_factory.mktemp("verify13")
    host = Host(base / "root", base / "work")
    kits.install_classic(kits.cuda13("13.1"), host.path("/usr/local/cuda-13.1"), "13.1")
    return host


def test_cpu_torch_is_reported_with_its_version(host13):
    venv = torch_venv()
    proc = host13.run("verify", "13.1", "--python", str(venv / "bin" / "python"), "--json", timeout=300)
    out = report(proc)
    assert out["toolkit"]["short"] == "13.1" and out["toolkit"]["version"].startswith("13.1.")
    [cpu] = by_id(out, "torch.cuda_build")
    assert "2.13.0+cpu" in cpu["message"] and "CPU-only" in cpu["message"]
    assert cpu["facts"]["torch"] == "2.13.0+cpu" and cpu["facts"]["torch_cuda"] is None
    assert out["torch"]["torch"] == "2.13.0+cpu" and out["torch"]["available"] is False
    # the way out: the CUDA builds of this release (compat.toml torch_build), the toolkit's major and not newer first
    assert "13.0" in cpu["hint"] and "https://download.pytorch.org/whl/cu130" in cpu["hint"]
    # No GPU and no driver here: CPU-only is worth a note, not an error, and nothing else is an error.
    assert [c for c in out["checks"] if c["level"] == "error"] == []
    assert proc.returncode == 0


def test_python_without_torch_says_so(host13, tmp_path):
    venv = tmp_path / "plain"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    out = report(host13.run("verify", "13.1", "--python", str(venv / "bin" / "python"), "--json"))
    [missing] = by_id(out, "torch.installed")
    assert missing["level"] == "info"
    assert "no torch in" in missing["message"] and str(venv) in missing["message"]
    assert "No module named 'torch'" in missing["message"]


def test_python_hanging_on_import_is_bounded(host13, tmp_path):
    """Mirrors a home on a hung NFS mount: the interpreter blocks in site before any user code."""
    venv = tmp_path / "hung"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    pidfile = tmp_path / "pid"
    site = kits.site_packages(venv)
    (site / "sitecustomize.py").write_text(
        "import os, time\nopen(%r, 'w').write(str(os.getpid()))\ntime.sleep(600)\n" % str(pidfile))
    started = time.monotonic()
    proc = host13.run("verify", "13.1", "--python", str(venv / "bin" / "python"), "--timeout", "3", "--json",
                      timeout=120)
    elapsed = time.monotonic() - started
    out = report(proc)
    [probe] = by_id(out, "torch.probe")
    assert probe["level"] == "warning" and "did not answer within 3 s" in probe["message"]
    assert elapsed < 60, elapsed
    pid = int(pidfile.read_text())
    with pytest.raises(ProcessLookupError):  # the hung interpreter was killed, not left behind
        os.kill(pid, 0)


NOISY_TORCH = '''"""Mirrors a torch whose import prints (and a sitecustomize that swaps sys.stdout for a logger):
a fake report frame, then stdout replaced, so a report written to sys.stdout would be lost."""
import io, sys
print("@@cudaswitch-000000000000@@{\\"torch\\": \\"forged\\"}@@cudaswitch-000000000000@@")
sys.stdout = io.StringIO()
__version__ = "2.13.0+cpu"
__file__ = __file__
class version:
    cuda = None
    hip = None
class cuda:
    get_arch_list = staticmethod(lambda: [])
    is_available = staticmethod(lambda: False)
'''


def test_probe_survives_torch_printing_and_replacing_stdout(host13, tmp_path):
    py = venv_with_torch_package(tmp_path, "noisy", {"__init__.py": NOISY_TORCH})
    out = report(host13.run("verify", "13.1", "--python", py, "--json"))
    [cpu] = by_id(out, "torch.cuda_build")
    assert cpu["facts"]["torch"] == "2.13.0+cpu" and out["torch"]["torch"] == "2.13.0+cpu"


def test_a_torch_directory_that_is_no_package_is_a_warning(host13, tmp_path):
    """Mirrors running Python inside a pytorch source checkout: `torch` imports as an empty namespace."""
    py = venv_with_torch_package(tmp_path, "ns", {"README": "not a package\n"})
    out = report(host13.run("verify", "13.1", "--python", py, "--json"))
    [item] = by_id(out, "torch.installed")
    assert item["level"] == "warning" and "not an installed torch" in item["message"]
    assert out["torch"]["torch"] is None


GPU_TORCH = '''"""Mirrors torch 1.13+cu117 (built for sm_37..sm_86, no PTX) seen on two GPUs: an RTX 4090
(sm_89: runs the sm_86 code, binary compatible within a major) and an RTX 5090 (sm_120: no kernel image)."""
__version__ = "1.13.1+cu117"
class version:
    cuda = "11.7"
    hip = None
class cuda:
    get_arch_list = staticmethod(lambda: ["sm_37", "sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86"])
    is_available = staticmethod(lambda: True)
    device_count = staticmethod(lambda: 2)
    get_device_capability = staticmethod(lambda i: [(8, 9), (12, 0)][i])
    get_device_name = staticmethod(lambda i: ["NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 5090"][i])
class backends:
    class cudnn:
        version = staticmethod(lambda: 8500)
'''


def test_gpu_arch_verdicts_follow_binary_compatibility(host13, tmp_path):
    py = venv_with_torch_package(tmp_path, "gpu", {"__init__.py": GPU_TORCH})
    out = report(host13.run("verify", "13.1", "--python", py, "--json", env={"CUDASWITCH_PROBE_MATMUL": "0"}))
    arch = {c["facts"]["gpu"]: c for c in by_id(out, "torch.gpu_arch")}
    ada, blackwell = arch["NVIDIA GeForce RTX 4090"], arch["NVIDIA GeForce RTX 5090"]
    assert ada["level"] == "ok" and "sm_86" in ada["message"]
    assert blackwell["level"] == "error" and "no kernel image is available" in blackwell["message"]
    # names a pinned build whose arch list has it, from the table `cudaswitch torch` reads
    assert blackwell["hint"].startswith('torch 2.15\'s CUDA 13.2 build has sm_120: pip install "torch==2.15.*"')
    assert "whl/cu132" in blackwell["hint"]
    assert out["torch"]["cudnn"] == 8500 and by_id(out, "env.cudnn_copies")[0]["facts"]["torch_cudnn"] == "8.5.0"


def test_use_bounds_a_hung_python_by_the_configured_torch_timeout(host13, tmp_path):
    """`use` probes the first python3 on the switched PATH; one that hangs (the same hung-NFS case)
    costs at most config.toml's torch_timeout, the switch still happens, and the line says why."""
    venv = tmp_path / "hung"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    (kits.site_packages(venv) / "sitecustomize.py").write_text("import time\ntime.sleep(600)\n")
    config = tmp_path / "config"
    config.mkdir()
    (config / "config.toml").write_text("torch_timeout = 2\n")
    env = {**host13.env, "PATH": "%s:%s" % (venv / "bin", host13.env["PATH"]),
           "CUDASWITCH_CONFIG_DIR": str(config), "CUDASWITCH_CACHE_DIR": str(tmp_path / "cache")}
    started = time.monotonic()
    # The interpreter directly, not a PATH-rewriting launcher shim, so python3 stays the hung one.
    proc = subprocess.run([sys.executable, "-m", "cudaswitch", "use", "13.1", "--shell", "bash"],
                          capture_output=True, text=True, env=env, timeout=120)
    elapsed = time.monotonic() - started
    assert proc.returncode == 0 and "export CUDA_HOME=" in proc.stdout
    assert "did not answer within 2 s" in proc.stderr and proc.stderr.count("\n") == 1
    assert elapsed < 30, elapsed  # the hung python sleeps 600 s: this proves it was cut
