"""Cluster driver skew where a node's driver release cannot be read (a libcuda-only read, as under
WSL or in a container without /proc/driver/nvidia): the driver's CUDA version still tells two
drivers apart, in the skew report and for `--strict --same driver`."""

import json
import subprocess

from tests.conftest import CUDASWITCH, Host
from tests.verify_support import build_libcuda


def node_report(tmp_path, name, cuda):
    """`audit --json` of a node whose only driver fact is libcuda's cuDriverGetVersion."""
    host = Host(tmp_path / name / "root", tmp_path / name / "work")
    (host.root / "etc").mkdir(parents=True)
    (host.root / "etc/hostname").write_text(name + "\n")
    libcuda = build_libcuda(tmp_path / name / "lib", cuda, init_rc=0, gpus=["sm_86"])
    proc = host.run("audit", "--json", env={"CUDASWITCH_LIBCUDA": str(libcuda)}, timeout=300)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["driver"]["release"] is None and report["driver"]["cuda"]  # the case under test
    path = tmp_path / (name + ".json")
    path.write_text(proc.stdout)
    return host, path


def test_drivers_known_only_by_cuda_version_are_told_apart(tmp_path):
    host, first = node_report(tmp_path, "gpu01", 12040)
    _, second = node_report(tmp_path, "gpu02", 12080)
    _, third = node_report(tmp_path, "gpu03", 12080)

    def merge(*args):
        return subprocess.run([CUDASWITCH, "audit", "merge", str(first), str(second), str(third), *args],
                              capture_output=True, text=True, timeout=120, env=host.env)

    data = json.loads(merge("--json").stdout)["skew"]["driver"]
    assert data["compared_by"] == "cuda"
    assert data["releases"] == {"CUDA 12.4 (release unknown)": ["gpu01"], "CUDA 12.8 (release unknown)":
                                ["gpu02", "gpu03"]}
    table = merge()
    [line] = [l for l in table.stdout.splitlines() if l.startswith("skew: driver release")]
    assert "CUDA 12.4" in line and "gpu01" in line and "CUDA 12.8" in line, table.stdout
    strict = merge("--strict", "--same", "driver")
    assert strict.returncode == 1 and "gpu01" in strict.stderr, strict.stderr
