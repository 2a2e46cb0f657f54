"""`doctor` — the layered report on this very machine, and its hygiene and
project-dependency layers on small laid-out cases (each says which real case it mirrors)."""

import os
import subprocess
import sys

import pytest

from tests import kits
from tests.verify_support import by_id, report

from cudaswitch.verify.checkregistry import LAYER_KEYS

LAYERS = list(LAYER_KEYS)  # hardware, driver, toolkit, compiler (the host's), framework, deps, env


def real_machine_env(tmp_path):
    """This host as it is (no CUDASWITCH_ROOT), with cudaswitch's own dirs in tmp."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUDASWITCH_")}
    env.update(CUDASWITCH_CACHE_DIR=str(tmp_path / "cache"), CUDASWITCH_CONFIG_DIR=str(tmp_path / "config"),
               CUDASWITCH_DATA_DIR=str(tmp_path / "data"))
    return env


def run_doctor(env, *extra):
    from tests.conftest import CUDASWITCH

    return subprocess.run([CUDASWITCH, "doctor", "--json", *extra], env=env, capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL)


def test_doctor_on_this_machine(tmp_path):
    env = real_machine_env(tmp_path)
    out = report(run_doctor(env))
    layers = [c["layer"] for c in out["checks"]]
    assert sorted(set(layers), key=layers.index) == LAYERS  # every layer, bottom up, in order
    driver_present = os.path.exists("/proc/driver/nvidia/version")
    errors = [c for c in out["checks"] if c["level"] == "error"]
    if not driver_present:  # this dev box: no GPU, no driver: nothing here is an error
        assert errors == [], errors
        [hw] = by_id(out, "hardware.gpus")
        # an NVIDIA card without its driver would be worth a warning; no card at all is just a fact
        assert hw["level"] == ("warning" if hw["facts"]["pci"] else "info")
        [drv] = by_id(out, "driver.present")
        assert drv["level"] == "info" and drv["message"] == "no NVIDIA driver on this host"
    if out["toolkit"]:
        assert out["toolkit"]["root"] and out["toolkit"]["status"] in ("ok", "incomplete", "broken")


def test_wrapper_cuda_home_on_a_laid_out_host(host, tmp_path):
    """A wrapper script in a bin dir whose parent is no toolkit, as /usr/local/bin/nvcc exec-ing
    /usr/local/cuda-13.0/bin/nvcc on a machine set up by hand: torch's cpp_extension would take
    CUDA_HOME=/usr/local from it."""
    kit = kits.install_classic(kits.cuda13("13.0"), tmp_path / "cuda-13.0", "13.0")
    wrapdir = tmp_path / "wrap" / "bin"
    wrapdir.mkdir(parents=True)
    (wrapdir / "nvcc").write_text('#!/bin/sh\nexec %s/bin/nvcc "$@"\n' % kit)
    (wrapdir / "nvcc").chmod(0o755)
    out = report(host.run("doctor", "--json", env={"PATH": "%s:%s" % (wrapdir, host.env["PATH"])}))
    [item] = by_id(out, "env.torch_cuda_home")
    assert item["level"] == "warning" and item["facts"]["cuda_home"] == str(tmp_path / "wrap")
    assert item["facts"]["nvcc_target"] == str(kit / "bin" / "nvcc")
    assert item["hint"] == "export CUDA_HOME=%s or `cudaswitch use`" % kit


def test_env_hygiene_stale_entries_and_several_nvcc(host, tmp_path):
    """Mirrors an rc file that still adds a removed /usr/local/cuda-10.2, plus two toolkits on PATH."""
    a = kits.install_classic(kits.cuda13("13.0"), tmp_path / "cuda-13.0", "13.0")
    b = kits.install_classic(kits.cuda13("13.1"), tmp_path / "cuda-13.1", "13.1")
    path = "/usr/local/cuda-10.2/bin:%s/bin:%s/bin:%s" % (a, b, host.env["PATH"])
    out = report(host.run("doctor", "--json", env={"PATH": path, "LD_LIBRARY_PATH": "/usr/local/cuda-10.2/lib64"}))
    stale = {c["facts"]["variable"]: c for c in by_id(out, "env.stale_entries")}
    assert stale["PATH"]["level"] == "warning" and stale["PATH"]["facts"]["entries"] == ["/usr/local/cuda-10.2/bin"]
    assert stale["LD_LIBRARY_PATH"]["facts"]["entries"] == ["/usr/local/cuda-10.2/lib64"]
    [several] = by_id(out, "env.several_nvcc")
    assert several["level"] == "warning" and str(a) in several["message"] and str(b) in several["message"]


FAKE_TORCH = '''"""Stand-in for a cu121 torch wheel's Python surface (what torch_probe reads), no GPU."""
__version__ = "2.4.1+cu121"
class version:
    cuda = "12.1"
    hip = None
class cuda:
    get_arch_list = staticmethod(lambda: ["sm_50", "sm_80", "sm_90"])
    is_available = staticmethod(lambda: False)
    device_count = staticmethod(lambda: 0)
class backends:
    class cudnn:
        version = staticmethod(lambda: 90100)
'''


def _dist(site, name, version, installer="pip"):
    d = site / ("%s-%s.dist-info" % (name.replace("-", "_"), version))
    d.mkdir()
    (d / "METADATA").write_text("Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version))
    (d / "INSTALLER").write_text(installer + "\n")


@pytest.fixture
def cu12_torch_venv(tmp_path):
    """Mirrors a venv with a cu121 torch from pip, a stray nvidia-cublas-cu11 wheel, and a conda
    record of pytorch in the same prefix (conda and pip both installed torch). The torch package is a
    stand-in: the real cu12 wheel is not on this machine's disk."""
    venv = tmp_path / "cu12venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    site = kits.site_packages(venv)
    (site / "torch").mkdir()
    (site / "torch" / "__init__.py").write_text(FAKE_TORCH)
    _dist(site, "torch", "2.4.1+cu121")
    _dist(site, "nvidia-cublas-cu11", "11.11.3.6")
    _dist(site, "nvidia-cublas-cu12", "12.1.3.1")
    (venv / "conda-meta").mkdir()
    (venv / "conda-meta" / "pytorch-2.4.1-py3.11_cuda12.1_cudnn9.1.0_0.json").write_text("{}")
    return venv


def test_project_dependencies_layer(host, cu12_torch_venv):
    kits.install_classic(kits.cuda13("13.0"), host.path("/usr/local/cuda-13.0"), "13.0")
    py = str(cu12_torch_venv / "bin" / "python")
    out = report(host.run("doctor", "--json", "--python", py))
    [wheels] = by_id(out, "deps.cuda_wheels")
    assert wheels["level"] == "warning" and wheels["facts"]["wheels"] == ["nvidia-cublas-cu11 11.11.3.6"]
    [owners] = by_id(out, "deps.torch_owners")
    assert owners["level"] == "warning" and "conda" in owners["message"] and "pip" in owners["message"]


def test_torch_major_and_minor_verdicts(host, cu12_torch_venv):
    """torch built with CUDA 12.1: a 13.x toolkit -> extension builds refused (torch's own words);
    a 12.4 toolkit -> same major, a warning."""
    kits.install_classic(kits.cuda13("13.0"), host.path("/usr/local/cuda-13.0"), "13.0")
    kits.install_classic_runtime12(host.path("/usr/local/cuda-12.4"))
    py = str(cu12_torch_venv / "bin" / "python")
    [major] = by_id(report(host.run("verify", "13.0", "--python", py, "--json")), "torch.toolkit_major")
    assert major["level"] == "error"
    assert ("The detected CUDA version (13.0) mismatches the version that was used to compile PyTorch (12.1). "
            "Please make sure to use the same CUDA versions.") in major["message"]
    [minor] = by_id(report(host.run("verify", "12.4", "--python", py, "--json")), "torch.toolkit_minor")
    assert minor["level"] == "warning" and "12.1" in minor["message"] and "12.4" in minor["message"]
