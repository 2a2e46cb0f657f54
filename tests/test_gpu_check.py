"""tests/gpu/check.sh where there is no GPU (this machine, CI): one line and a non-zero exit, and
with --force the whole script runs through (the same steps a GPU machine runs) and judges what it
could, saying what it could not check instead of passing it."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests import kits

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "tests" / "gpu" / "check.sh"


def _no_gpu_here():
    if os.path.exists("/proc/driver/nvidia/version") or os.path.exists("/dev/nvidia0"):
        pytest.skip("this machine has an NVIDIA GPU: tests/gpu/check.sh runs for real here")


def test_without_a_gpu_it_says_so_in_one_line(tmp_path):
    _no_gpu_here()
    kits.require("bash")
    proc = subprocess.run(["bash", str(SCRIPT), "--out", str(tmp_path / "results")], cwd=REPO, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "no NVIDIA GPU found" in lines[0], proc.stderr
    assert not (tmp_path / "results").exists()  # nothing half-made


def test_bad_argument_is_one_line(tmp_path):
    proc = subprocess.run(["bash", str(SCRIPT), "--frobnicate"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1 and "unknown argument" in proc.stderr


def test_forced_run_records_every_step_and_judges_honestly(tmp_path):
    """The full run minus the GPU: cudaswitch installed offline from the working tree, every JSON
    recorded, and GPU-only expectations reported as 'cannot check', never as pass."""
    _no_gpu_here()
    kits.require("bash")
    if not list((REPO / "tests" / "gpu" / "wheels").glob("platformdirs-*.whl")):
        subprocess.run(["bash", str(SCRIPT), "--prepare"], cwd=REPO, check=True, timeout=300, capture_output=True)
    results = tmp_path / "results"
    proc = subprocess.run(["bash", str(SCRIPT), "--force", "--out", str(results)], cwd=REPO, capture_output=True,
                          text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert proc.returncode in (1, 3), proc.stdout + proc.stderr
    for name in ("drivers.json", "list.json", "doctor.json", "explain-no-kernel-image.json",
                 "explain-driver-insufficient.json", "verdicts.json"):
        json.loads((results / name).read_text())  # each is there and is JSON
    steps = [line.split("\t") for line in (results / "steps.tsv").read_text().splitlines()]
    assert {"list", "doctor", "drivers"} <= {s[0] for s in steps}
    assert all(s[1] in ("0", "1") for s in steps), steps  # cudaswitch exit codes, not timeouts (124)
    for err in results.glob("*.err"):
        assert "Traceback" not in err.read_text(), err
    listed = json.loads((results / "list.json").read_text())
    assert len(list(results.glob("verify-*.json"))) == len(listed)
    verdicts = {row["expectation"]: row["status"] for row in json.loads((results / "verdicts.json").read_text())}
    assert verdicts["every driver source gives the same release"] == "cannot check"
    assert verdicts["cudaswitch lists every GPU with its capability"] == "cannot check"
    assert verdicts["explain knows 'no kernel image'"] == "pass"
    assert "pass" not in {status for name, status in verdicts.items() if "kernel ran" in name}
