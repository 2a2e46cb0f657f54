"""The README's Slurm pipeline, run as written on a one-host Slurm the test starts itself
(tests/slurm_support.py): srun runs one real `cudaswitch audit --json` per node into
audit/%N.json, then `audit merge audit/*.json` merges them. This host is the only node, so
`--nodes=64` becomes `--nodes=1`; nothing else in the lines changes."""

import json
import re
import shutil
import subprocess
from pathlib import Path

from tests import kits
from tests.cluster_support import LIBCUDA, NCCL, add_nccl
from tests.conftest import Host
from tests.slurm_support import one_host_slurm
from tests.verify_support import build_libcuda, write_proc_version

README = Path(__file__).resolve().parent.parent / "README.md"


def readme_slurm_lines():
    """The indented command lines under the README's `# Slurm` comment, up to the blank line."""
    text = README.read_text()
    block = text[text.index("    # Slurm:"):].split("\n\n", 1)[0]
    lines = [line.strip() for line in block.splitlines()[1:]]
    assert any(line.startswith("srun ") for line in lines) and any("audit merge" in line for line in lines), lines
    return lines


def test_readme_srun_pipeline_on_a_one_host_slurm(tmp_path):
    lines = readme_slurm_lines()
    run = [re.sub(r"--nodes=\d+", "--nodes=1", line) for line in lines]
    with one_host_slurm(tmp_path / "slurm", {}) as (slurm_env, host):
        # this host's node root: what the node itself would audit (real 12.4 + NCCL and 13.0, 2 H100s)
        root = tmp_path / "node"
        kits.install_classic_runtime12(root / "usr/local/cuda-12.4")
        add_nccl(root / "usr/local/cuda-12.4", NCCL)
        kits.install_classic(kits.cuda13("13.0"), root / "usr/local/cuda-13.0", "13.0")
        (root / LIBCUDA).parent.mkdir(parents=True)
        shutil.copy(build_libcuda(tmp_path / "lib", 13000, init_rc=0, gpus=["sm_90", "sm_90"]), root / LIBCUDA)
        write_proc_version(root, "580.95.05")
        (root / "etc").mkdir()
        (root / "etc/hostname").write_text(host + "\n")
        env = {**Host(root, tmp_path / "work").env, "CUDASWITCH_LIBCUDA": str(root / LIBCUDA),
               "SLURM_CONF": slurm_env["SLURM_CONF"]}
        jobdir = tmp_path / "job"
        jobdir.mkdir()
        proc = subprocess.run(["bash", "-euc", "\n".join(run[:-1])], cwd=jobdir, env=env, capture_output=True,
                              text=True, timeout=300, start_new_session=True)
        assert proc.returncode == 0, proc.stderr
        merged = subprocess.run(["bash", "-euc", run[-1] + " --json"], cwd=jobdir, env=env, capture_output=True,
                                text=True, timeout=300)
    assert sorted(p.name for p in (jobdir / "audit").iterdir()) == [host + ".json"]
    report = json.loads((jobdir / "audit" / (host + ".json")).read_text())
    assert report["host"] == host and report["driver"]["release"] == "580.95.05"
    assert [g["name"] for g in report["gpus"]] == ["NVIDIA H100 80GB HBM3"] * 2
    assert merged.returncode == 0 and merged.stderr == "", merged.stderr
    result = json.loads(merged.stdout)
    assert [h["host"] for h in result["hosts"]] == [host]
    assert sorted(r["version"] for r in result["toolkits"]) == ["12.4.131", kits.dist_versions(
        kits.cuda13("13.0").parent.parent)["nvidia-cuda-nvcc"]]
    assert result["skew"]["missing"] == [] and result["skew"]["refused"] == []
