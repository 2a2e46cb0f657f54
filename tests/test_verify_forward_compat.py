"""Forward compatibility: a real 13.1 tree with a cuda-compat package's compat/libcuda.so.580.65.06
(a hand-made stand-in under the real file name, as NVIDIA's cuda-compat-13-1 lays it out) on a host
whose kernel module is older (570.124.06, CUDA 12.8) or newer (590.44.01), with the GPUs a driver
stand-in reports. Mirrors a DGX node on a long-term driver running a newer CUDA container."""

import os
import shutil

import pytest

from tests import kits
from tests.verify_support import build_libcuda, by_id, report, write_proc_version

COMPAT = "libcuda.so.580.65.06"


@pytest.fixture(scope="module")
def compat_host(tmp_path_factory):
    from tests.conftest import Host

    base = tmp_path_factory.mktemp("compat")
    host = Host(base / "root", base / "work")
    root = kits.install_classic(kits.cuda13("13.1"), host.path("/usr/local/cuda-13.1"), "13.1")
    (root / "compat").mkdir()
    shutil.copy(build_libcuda(base / "compat-src", 13010, init_rc=0), root / "compat" / COMPAT)
    os.symlink(COMPAT, root / "compat" / "libcuda.so.1")
    host.compat = root / "compat"
    host.drivers = {gpu: build_libcuda(base / gpu, 12080, init_rc=0, gpus=[gpu]) for gpu in ("sm_80", "sm_86")}
    return host


def forward(host, gpu, release, on_path=True):
    write_proc_version(host.root, release)
    env = {"CUDASWITCH_LIBCUDA": str(host.drivers[gpu])}
    if on_path:
        env["LD_LIBRARY_PATH"] = str(host.compat)
    [item] = by_id(report(host.run("verify", "13.1", "--json", env=env, timeout=300)), "driver.forward_compat")
    return item


def test_datacenter_gpu_with_older_driver_is_ok(compat_host):
    item = forward(compat_host, "sm_80", "570.124.06")
    assert item["level"] == "ok" and "A100" in item["message"] and "580.65.06" in item["message"]
    off_path = forward(compat_host, "sm_80", "570.124.06", on_path=False)
    assert off_path["level"] == "warning" and str(compat_host.compat) in off_path["hint"]


def test_consumer_gpu_is_error_804(compat_host):
    item = forward(compat_host, "sm_86", "570.124.06")
    assert item["level"] == "error" and "804" in item["message"] and "RTX 3090" in item["message"]


def test_compat_older_than_the_driver_is_error_803(compat_host):
    item = forward(compat_host, "sm_80", "590.44.01")
    assert item["level"] == "error" and "803" in item["message"] and "590.44.01" in item["message"]
