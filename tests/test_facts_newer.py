"""Facts that keep up: a driver newer than the driver table reads "at least" the newest CUDA the
table knows, never an exact older one; old drivers are read and judged; unknown GPU architectures
are refused in one line; the rows since CUDA 13.1 (driver 595.45.04 for 13.2 and 610.43.02 for 13.3,
gcc ceilings read from 13.2-13.5's host_config.h, sm_107 from 13.4's nvcc) answer. The drivers are
those real clusters run: 615.71.09 (an R615 node, newer than the table), 610.43.02 (bundled with CUDA
13.3.1), 418.67 (an R418 CentOS 7 node), 375.26 (CUDA 8's)."""

import json
import subprocess
import sys

import pytest

from tests.test_list_runs_here import complete_toolkit
from tests.verify_support import write_proc_version


@pytest.fixture
def bare(host, tmp_path):
    venv = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    return host, str(venv / "bin" / "python")


def torch(bare, *args):
    host, python = bare
    return host.run("torch", "--python", python, *args, timeout=300)


def test_a_driver_newer_than_the_table_reads_at_least(bare):
    proc = torch(bare, "--driver", "615.71.09", "--gpu", "sm_90")
    first = proc.stdout.splitlines()[0]
    assert first.startswith("driver: CUDA at least 13.3 (newer than the facts cudaswitch has)"), first
    out = json.loads(torch(bare, "--driver", "615.71.09", "--gpu", "sm_90", "--json").stdout)
    assert out["driver"]["cuda_at_least"] is True and out["driver"]["cuda"] == "13.3"
    # every 13.x build runs through minor-version compatibility; nothing says "too old"
    assert not [b for b in out["builds"] if b["cuda"].startswith("13.") and b["fits"] is False]
    same_branch = json.loads(torch(bare, "--driver", "610.57.04", "--gpu", "sm_90", "--json").stdout)["driver"]
    assert same_branch["cuda"] == "13.3" and not same_branch["cuda_at_least"]


def test_doctor_says_at_least_for_a_derived_newer_driver(host, tmp_path):
    """A node whose libcuda cannot be asked (no libcuda.so.1 on the loader path of the probe), with
    the kernel module's release in /proc: the CUDA version is derived from the release."""
    write_proc_version(host.root, "615.71.09")
    env = {"CUDASWITCH_LIBCUDA": str(tmp_path / "absent" / "libcuda.so.1")}
    proc = host.run("doctor", "--json", env=env, timeout=300)
    present = [c for c in json.loads(proc.stdout)["checks"] if c["id"] == "driver.present"][0]
    assert "supports CUDA at least 13.3 (newer than the facts cudaswitch has)" in present["message"], present


def test_use_verdict_says_at_least(host, tmp_path):
    complete_toolkit(host.path("/usr/local/cuda-12.9"), "12.9", "86")
    write_proc_version(host.root, "615.71.09")
    env = {"CUDASWITCH_LIBCUDA": str(tmp_path / "absent" / "libcuda.so.1")}
    listed = json.loads(host.run("list", "--json", env=env).stdout)
    why = listed[0]["runs_here"]["why"]
    assert listed[0]["runs_here"]["runs"] == "ok" and "at least 13.3 (newer than the facts" in why, why


def test_an_r418_driver_is_read_and_judged(bare):
    proc = torch(bare, "--driver", "418.67", "--gpu", "sm_61")
    assert proc.stdout.splitlines()[0].startswith("driver: CUDA 10.1 (--driver release")
    assert "none visible" not in proc.stdout and "give --driver" not in proc.stdout
    out = json.loads(torch(bare, "--driver", "418.67", "--gpu", "sm_61", "--json").stdout)
    assert out["driver"]["cuda"] == "10.1" and all(b["fits"] is not True for b in out["builds"]
                                                   if b["cuda"] > "10.1")


def test_a_driver_older_than_every_release_is_refused_by_every_build(bare):
    out = json.loads(torch(bare, "--driver", "375.26", "--gpu", "sm_61", "--json").stdout)
    assert all(b["fits"] is False for b in out["builds"])
    assert out["reason"] == "driver 375.26 is older than every CUDA release cudaswitch knows (CUDA 9.0 needs 384.81)"


def test_no_build_names_the_oldest_torch_of_the_table(bare):
    out = json.loads(torch(bare, "--driver", "440", "--gpu", "sm_35", "--json").stdout)
    oldest = min((b["torch"] for b in out["builds"]), key=lambda v: tuple(map(int, v.split("."))))
    assert "(torch 2.6 and newer)" not in out["reason"]
    assert out["recommended"] is not None or "torch %s and newer" % oldest in out["reason"] \
        or "unknown" in out["reason"], out["reason"]


@pytest.mark.parametrize("gpu", ["sm_999", "sm_66", "9.9"])
def test_an_unknown_architecture_is_refused_in_one_line(bare, gpu):
    proc = torch(bare, "--driver", "580.65.06", "--gpu", gpu)
    assert proc.returncode == 2 and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1 and "no GPU architecture cudaswitch knows" in proc.stderr


@pytest.mark.parametrize("gpu,fits", [("sm_103", True), ("sm_107", True), ("sm_110", False), ("sm_121", True),
                                      ("sm_87", True)])
def test_new_architectures_are_known(bare, gpu, fits):
    """B300, Rubin (runs sm_100 code), Thor (no sm_110 code in the wheels), GB10 (runs sm_120 code),
    Orin (runs sm_86 code): all accepted, each judged against 2.15's wheel."""
    out = json.loads(torch(bare, "--driver", "615.71.09", "--gpu", gpu, "--json").stdout)
    wheel = [b for b in out["builds"] if b["torch"] == "2.15" and b["cuda"] == "13.2"][0]
    assert wheel["fits"] is fits, wheel["checks"]


def test_rows_since_13_1():
    from cudaswitch.verify import facttables

    assert facttables.driver_minimum("13.2")["driver"] == "595.45.04"
    assert facttables.driver_minimum("13.3")["driver"] == "610.43.02"
    assert [facttables.gcc_ceiling(v)[0] for v in ("13.2.86", "13.3.73", "13.4.92", "13.5.37")] == [15, 15, 16, 16]
    assert facttables.arch_row("sm_107")["first"] == "13.4"
    assert facttables.arch_row("sm_70")["last"] == "12.9"
    releases = {r["cuda"]: r for r in facttables.load()["release"]}
    assert releases["13.4"]["label"] == "13.4.1" and releases["13.5"]["date"] == "2026-11-04"
    assert facttables.driver_cuda("610.43.02") == {"cuda": "13.3", "cuda_at_least": False, "older_than": None}
    assert facttables.driver_cuda("615.71.09") == {"cuda": "13.3", "cuda_at_least": True, "older_than": None}


def test_mixed_gpus_say_the_policy_and_conda_pins_a_cuda_build(bare):
    """A workstation with a GTX 1080 and an RTX 3090 on R550: every GPU must be covered, and the
    conda line must not resolve to a CPU build on a GPU-less build host."""
    proc = torch(bare, "--driver", "550.54.14", "--gpu", "sm_61", "--gpu", "sm_86")
    lines = proc.stdout.splitlines()
    assert lines[1].startswith("GPUs: sm_61, sm_86 (mixed: a build must have code for every GPU; conda's "
                               "__cuda_arch names only the lowest, NVIDIA's variant provider the highest)")
    conda = [line for line in lines if line.startswith("  conda install -c conda-forge")]
    assert conda and '"pytorch=' in conda[0] and '=cuda*"' in conda[0], lines
    assert "conda builds carry their own arch lists, not these pip wheels'" in proc.stdout
    single = torch(bare, "--driver", "550.54.14", "--gpu", "sm_86").stdout.splitlines()[1]
    assert single == "GPUs: sm_86"


def test_use_prints_at_least_in_its_verdict_line(host, tmp_path):
    complete_toolkit(host.path("/usr/local/cuda-12.9"), "12.9", "86")
    write_proc_version(host.root, "615.71.09")
    env = {"CUDASWITCH_LIBCUDA": str(tmp_path / "absent" / "libcuda.so.1")}
    proc = host.run("use", "12.9", "--shell", "json", env=env, timeout=300)
    assert proc.returncode == 0 and "driver CUDA at least 13.3" in proc.stderr, proc.stderr


def test_an_image_needing_a_newer_cuda_than_the_table_is_cannot_tell_on_a_newer_driver():
    """NVIDIA_REQUIRE_CUDA=cuda>=13.4 on an R615 node: the table's newest driver row is 13.3's, so
    the driver supports 13.3 or newer: cannot tell, never "cannot start"."""
    from cudaswitch.audit.imagecheck import judge_term
    from cudaswitch.verify import facttables

    driver = dict(facttables.driver_cuda("615.71.09"), release="615.71.09")
    ok, said = judge_term(("cuda", ">=", "13.4"), driver, None)
    assert ok is None and "at least 13.3" in said
    assert judge_term(("cuda", "<", "13.0"), driver, None)[0] is False
    assert judge_term(("cuda", ">=", "13.4"), dict(driver, cuda_at_least=False), None)[0] is False
