"""Acceptance 1 of the verification issue: the user's real torch, seen through `verify --python`."""

import os
import subprocess
import sys
import time

import pytest

from tests import kits
from tests.verify_support import by_id, report, torch_venv


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
