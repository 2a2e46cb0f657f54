"""`audit` reports each NCCL copy (path, version) and each network interface's MTU and state, and
`audit merge` names the NCCL versions and MTUs that differ between nodes: two InfiniBand GPU
nodes' roots, hand-made as a Slurm cluster's nodes have them (libnccl from NVIDIA's libnccl2 deb in
/usr/lib/x86_64-linux-gnu, the nvidia-nccl wheel in a venv, ib0 with IPoIB MTU 2044 on one node and
4092 on the other, eth0, lo and docker0), each audited with --root, through the real commands."""

import json
import subprocess

import pytest

from tests.conftest import CUDASWITCH, Host


def make_node(root, name, nccl, ib_mtu):
    (root / "etc").mkdir(parents=True)
    (root / "etc/hostname").write_text(name + "\n")
    libdir = root / "usr/lib/x86_64-linux-gnu"
    libdir.mkdir(parents=True)
    (libdir / ("libnccl.so.%s" % nccl)).write_bytes(b"\x7fELF")
    (libdir / "libnccl.so.2").symlink_to("libnccl.so.%s" % nccl)
    wheel = root / "opt/venv/lib/python3.12/site-packages/nvidia/nccl/lib"
    wheel.mkdir(parents=True)
    (wheel / "libnccl.so.2").write_bytes(b"\x7fELF")  # the wheel names no version: none is invented
    for iface, mtu, state in (("lo", 65536, "unknown"), ("eth0", 1500, "up"), ("ib0", ib_mtu, "up"),
                              ("docker0", 1500, "down")):
        directory = root / "sys/class/net" / iface
        directory.mkdir(parents=True)
        (directory / "mtu").write_text("%d\n" % mtu)
        (directory / "operstate").write_text(state + "\n")


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    base = tmp_path_factory.mktemp("ibcluster")
    make_node(base / "gpu01", "gpu01", "2.21.5", 2044)
    make_node(base / "gpu02", "gpu02", "2.18.3", 4092)
    runner = Host(base / "gpu01", base / "work")
    files = {}
    for name in ("gpu01", "gpu02"):
        proc = runner.run("audit", "--json", "--root", str(base / name), timeout=300)
        assert proc.returncode == 0, proc.stderr
        files[name] = base / (name + ".json")
        files[name].write_text(proc.stdout)
    return runner, files


def test_audit_reports_nccl_copies_and_interfaces(reports):
    """--root gives the loader's copies; on the node itself (CUDASWITCH_ROOT) with its venv active,
    the venv's nvidia-nccl wheel too."""
    runner, files = reports
    report = json.loads(files["gpu01"].read_text())
    assert report["nccl"] == [{"path": "/usr/lib/x86_64-linux-gnu/libnccl.so.2", "version": "2.21.5"}]
    live = json.loads(runner.run("audit", "--json", env={"VIRTUAL_ENV": "/opt/venv"}, timeout=300).stdout)
    assert {"path": "/opt/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2",
            "version": None} in live["nccl"]
    assert {"name": "ib0", "mtu": 2044, "state": "up"} in report["interfaces"]
    assert {"name": "docker0", "mtu": 1500, "state": "down"} in report["interfaces"]


def test_merge_names_nccl_and_mtu_skew(reports):
    runner, files = reports
    proc = subprocess.run([CUDASWITCH, "audit", "merge", str(files["gpu01"]), str(files["gpu02"]), "--json"],
                          capture_output=True, text=True, timeout=120, env=runner.env)
    assert proc.returncode == 0, proc.stderr
    skew = json.loads(proc.stdout)["skew"]
    assert skew["nccl"] == {"2.21.5": ["gpu01"], "2.18.3": ["gpu02"]}
    assert skew["mtu"] == {"ib0": {"2044": ["gpu01"], "4092": ["gpu02"]}}  # eth0 agrees; lo, docker0 never count
    text = subprocess.run([CUDASWITCH, "audit", "merge", str(files["gpu01"]), str(files["gpu02"])],
                          capture_output=True, text=True, timeout=120, env=runner.env).stdout
    assert "skew: MTU of ib0: " in text and "2044 on gpu01" in text
    assert "skew: NCCL: " in text and "2.18.3" in text


def test_an_mtu_alone_makes_another_node_type(reports, tmp_path):
    """The same node twice but for ib0's MTU: two node types, not one."""
    runner, files = reports
    other = json.loads(files["gpu01"].read_text())
    other["host"] = "gpu03"
    for iface in other["interfaces"]:
        if iface["name"] == "ib0":
            iface["mtu"] = 4092
    (tmp_path / "gpu03.json").write_text(json.dumps(other))
    proc = subprocess.run([CUDASWITCH, "audit", "merge", str(files["gpu01"]), str(tmp_path / "gpu03.json"),
                           "--json"], capture_output=True, text=True, timeout=120, env=runner.env)
    merged = json.loads(proc.stdout)
    assert len(merged["node_types"]) == 2 and merged["skew"]["mtu"]["ib0"] == {"2044": ["gpu01"], "4092": ["gpu03"]}
    bad = dict(other, interfaces=[{"name": "ib0", "mtu": "jumbo", "state": "up"}])
    (tmp_path / "gpu04.json").write_text(json.dumps(bad))
    refused = subprocess.run([CUDASWITCH, "audit", "merge", str(files["gpu01"]), str(tmp_path / "gpu04.json")],
                             capture_output=True, text=True, timeout=120, env=runner.env)
    assert "interfaces 0 is not an object of name, mtu, state" in refused.stderr + refused.stdout
