"""`audit merge --image`: before a job is sent to a partition, which nodes will start the image.
Three nodes audited for real (`audit --json` under libcuda stand-ins and /proc driver lines): one
with a 550 driver and an H100, one with a 525 driver (too old for the image's cuda>=12.4, and not
the 535 branch its second alternative allows), one with a 550 driver and an RTX 5090 (sm_120) that
the image's torch 2.6.0+cu124 carries no code for."""

import json
import subprocess

import pytest

from tests import image_support as images
from tests.conftest import CUDASWITCH, Host
from tests.verify_support import build_libcuda, write_proc_version

NODES = {"gpu01": ("550.54.15", 12040, "sm_90"), "gpu02": ("525.60.13", 12000, "sm_90"),
         "gpu03": ("550.54.15", 12040, "sm_120")}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    base = tmp_path_factory.mktemp("cluster")
    reports = []
    for name, (release, cuda, gpu) in NODES.items():
        host = Host(base / name / "root", base / name / "work")
        (host.root / "etc").mkdir(parents=True)
        (host.root / "etc/hostname").write_text(name + "\n")
        write_proc_version(host.root, release)
        libcuda = build_libcuda(base / name / "lib", cuda, init_rc=0, gpus=[gpu])
        proc = host.run("audit", "--json", "--no-progress", env={"CUDASWITCH_LIBCUDA": str(libcuda)}, timeout=120)
        assert proc.returncode == 0, proc.stderr
        (base / (name + ".json")).write_text(proc.stdout)
        reports.append(str(base / (name + ".json")))
    return host, reports


def merge(host, reports, *args):
    return subprocess.run([CUDASWITCH, "audit", "merge", *reports, *args], capture_output=True, text=True,
                          timeout=120, env=host.env, stdin=subprocess.DEVNULL)


def test_which_nodes_start_the_image(cluster):
    host, reports = cluster
    ref = images.references(images.cuda_image())["docker-archive"]
    data = json.loads(merge(host, reports, "--json", "--image", ref).stdout)["image"]
    assert data["can_run_hosts"] == "gpu01" and data["cannot_run_hosts"] == "gpu[02-03]"
    assert data["cannot_tell"] == [] and data["image"]["torch"][0]["version"] == "2.6.0+cu124"
    why = {item["host"]: " ".join(item["reasons"]) for item in data["cannot_run"]}
    assert "cuda>=12.4 (the driver supports CUDA 12.0)" in why["gpu02"] and "driver>=535" in why["gpu02"]
    assert "sm_120" in why["gpu03"] and "cuda>=12.4" not in why["gpu03"]

    table = merge(host, reports, "--image", ref)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert any(line.startswith("image %s starts on 1 of 3 nodes: gpu01" % ref) for line in lines), table.stdout
    assert any(line.strip().startswith("cannot start on gpu02: ") for line in lines), table.stdout
    assert any(line.strip().startswith("cannot start on gpu03: ") and "sm_120" in line for line in lines)
    strict = merge(host, reports, "--image", ref, "--strict")
    assert strict.returncode == 1 and "the image cannot start on gpu[02-03]" in strict.stderr, strict.stderr


def test_two_driver_releases(cluster):
    """Acceptance's two-release cluster: the 550 node starts it, the 525 node does not."""
    host, reports = cluster
    ref = images.references(images.cuda_image())["oci"]
    data = json.loads(merge(host, reports[:2], "--json", "--image", ref).stdout)["image"]
    assert (data["can_run_hosts"], data["cannot_run_hosts"]) == ("gpu01", "gpu02")


def test_a_bad_image_is_one_line(cluster, tmp_path):
    host, reports = cluster
    proc = merge(host, reports, "--image", "oci:%s" % (tmp_path / "none"))
    assert proc.returncode == 1 and proc.stdout == "" and len(proc.stderr.splitlines()) == 1, proc.stderr
