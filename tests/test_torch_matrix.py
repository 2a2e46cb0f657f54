"""`cudaswitch torch` over a table of real machines (a GPU and the driver its cluster or desktop
runs) against every build the picker lists, checked by an oracle written apart from the product:
each build's arch list as its primary source gives it (the wheel read with
tools/torch_arch_from_wheel.py, PyTorch's build script at the release commit, a maintainer's
get_arch_list(), a release PR), NVIDIA's driver table and minor-version compatibility floors, and
the last driver branch of Kepler (R470) and Maxwell/Pascal/Volta (R580). A "fits" the oracle
contradicts is a false fit: there must be none. The count of decided pairs may only grow (1107 of
1269, 87%, since torch 1.12-2.5 were read from their wheels and pytorch/builder's build scripts: the
rest are builds whose arch list no primary source gives here)."""

import json
import subprocess
import sys

import pytest

# Linux x86_64 arch lists as the primary sources give them (see torch_builds.toml for each source).
WHEEL_13 = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]
WHEEL_128 = ["sm_70", "sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]
LEGACY_126 = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]
GROUND = {
    ("2.15", "13.2"): WHEEL_13, ("2.14", "13.0"): WHEEL_13, ("2.13", "13.0"): WHEEL_13, ("2.12", "13.0"): WHEEL_13,
    ("2.11", "13.0"): WHEEL_13, ("2.11", "12.8"): WHEEL_13, ("2.11", "12.6"): LEGACY_126,
    ("2.10", "12.8"): WHEEL_128, ("2.9", "12.8"): WHEEL_128, ("2.9", "13.0"): WHEEL_13, ("2.9", "12.6"): LEGACY_126,
    ("2.8", "12.8"): WHEEL_128, ("2.8", "12.9"): WHEEL_128 + ["compute_120"], ("2.8", "12.6"): LEGACY_126,
    ("2.7", "12.6"): LEGACY_126, ("2.7", "12.8"): WHEEL_13 + ["compute_120"],
    ("2.6", "12.4"): LEGACY_126, ("2.6", "12.6"): LEGACY_126,
}
# pytorch/builder manywheel/build_cuda.sh at each release/X.Y head (1.12-2.5): TORCH_CUDA_ARCH_LIST
# per CUDA version; PyPI's wheels of 2.0.1-2.5.1 read the same lists.
KEPLER_10 = ["sm_37", "sm_50", "sm_60", "sm_70"]
KEPLER_11 = KEPLER_10 + ["sm_75", "sm_80", "sm_86"]
KEPLER_118 = KEPLER_11 + ["sm_90"]
MAXWELL_12 = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]
GROUND.update({("1.12", "10.2"): KEPLER_10, ("1.12", "11.3"): KEPLER_11, ("1.12", "11.6"): KEPLER_11,
               ("1.13", "11.6"): KEPLER_11, ("1.13", "11.7"): KEPLER_11, ("2.0", "11.7"): KEPLER_11})
GROUND.update({(t, "11.8"): KEPLER_118 for t in ("2.0", "2.1", "2.2", "2.3", "2.4", "2.5")})
GROUND.update({(t, "12.1"): MAXWELL_12 for t in ("2.1", "2.2", "2.3", "2.4", "2.5")})
GROUND.update({(t, "12.4"): MAXWELL_12 for t in ("2.4", "2.5")})
# NVIDIA's table: the minimum driver of each CUDA GA release (13.2 and 13.3: the driver their
# forward-compatibility packages carry); minor-version compatibility floors.
MINIMUM = {"9.0": "384.81", "10.0": "410.48", "10.1": "418.39", "10.2": "440.33", "11.0": "450.51.05",
           "11.4": "470.42.01", "11.8": "520.61.05", "12.0": "525.60.13", "12.4": "550.54.14", "12.6": "560.28.03",
           "12.8": "570.26", "12.9": "575.51.03", "13.0": "580.65.06", "13.2": "595.45.04",
           "13.3": "610.43.02"}
FLOOR = {11: "450.80.02", 12: "525.60.13", 13: "580"}
LAST_BRANCH = {"3": 470, "5": 580, "6": 580, "7.0": 580, "7.2": 580}

# (what it is, driver release, GPUs): desktops, cluster nodes and clouds as they are run
MACHINES = [
    ("GTX 1080 Ti on an R470 cluster", "470.82.01", ["sm_61"]),
    ("GTX 1080 on R550", "550.54.14", ["sm_61"]),
    ("GTX 980 on R535", "535.129.03", ["sm_52"]),
    ("Tesla K80 on R470", "470.82.01", ["sm_37"]),
    ("Tesla P100 on R525", "525.60.13", ["sm_60"]),
    ("V100 on R535", "535.104.05", ["sm_70"]),
    ("V100 on R580", "580.65.06", ["sm_70"]),
    ("T4 on R450", "450.80.02", ["sm_75"]),
    ("T4 on R570", "570.86.10", ["sm_75"]),
    ("RTX 2080 on R418", "418.67", ["sm_75"]),
    ("A100 on R470", "470.82.01", ["sm_80"]),
    ("A100 on R550", "550.54.14", ["sm_80"]),
    ("RTX 3090 on R525", "525.60.13", ["sm_86"]),
    ("RTX 4090 on R535", "535.54.03", ["sm_89"]),
    ("L4 on R580", "580.95.05", ["sm_89"]),
    ("H100 on R535", "535.183.01", ["sm_90"]),
    ("H100 on R580", "580.65.06", ["sm_90"]),
    ("H200 on R610", "610.43.02", ["sm_90"]),
    ("B200 on R570", "570.133.20", ["sm_100"]),
    ("RTX 5090 on R575", "575.51.03", ["sm_120"]),
    ("B300 on R580", "580.82.07", ["sm_103"]),
    ("GB10 on R580", "580.95.05", ["sm_121"]),
    ("Rubin on R615", "615.71.09", ["sm_107"]),
    ("Thor on R580", "580.65.06", ["sm_110"]),
    ("K40 on R440", "440.33.01", ["sm_35"]),
    ("GTX 1080 and RTX 3090 on R550", "550.54.14", ["sm_61", "sm_86"]),
    ("V100 and H100 on R575", "575.57.08", ["sm_70", "sm_90"]),
]


def release(text):
    return tuple(int(p) for p in text.split("."))


def version(text):
    return tuple(int(p) for p in text.split("."))[:2]


def driver_runs(driver, cuda):
    """The oracle's driver check: NVIDIA's table, else minor-version compatibility."""
    known = [c for c, d in MINIMUM.items() if release(d) <= release(driver)]
    have = max(known, key=version)
    want = version(cuda)
    if version(have) >= want:
        return True
    floor = FLOOR.get(want[0])
    return version(have)[0] == want[0] and floor is not None and release(driver) >= release(floor)


def code_runs(sm, arch_list):
    cap = (int(sm[3:-1]), int(sm[-1]))
    for name in arch_list:
        kind, num = name.split("_")
        have = (int(num[:-1]), int(num[-1]))
        if (kind == "sm" and have[0] == cap[0] and have[1] <= cap[1]) or (kind == "compute" and have <= cap):
            return True
    return False


def not_beyond_last_branch(driver, sm):
    cap = "%s.%s" % (sm[3:-1], sm[-1])
    last = LAST_BRANCH.get(cap) or LAST_BRANCH.get(cap.split(".")[0])
    return last is None or release(driver)[0] <= last


@pytest.fixture(scope="module")
def answers(tmp_path_factory):
    from tests.conftest import Host

    root = tmp_path_factory.mktemp("matrix")
    (root / "root").mkdir()
    host = Host(root / "root", root / "work")
    venv = root / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    out = {}
    for name, driver, gpus in MACHINES:
        args = ["torch", "--python", str(venv / "bin/python"), "--driver", driver, "--json"]
        proc = host.run(*args + [a for g in gpus for a in ("--gpu", g)], timeout=300)
        assert proc.returncode in (0, 1) and proc.stderr == "", (name, proc.stderr)
        out[name] = json.loads(proc.stdout)
    return out


def test_no_false_fit_and_the_decided_share(answers):
    decided = undecided = 0
    false_fits = []
    for name, driver, gpus in MACHINES:
        for build in answers[name]["builds"]:
            if build["fits"] is None:
                undecided += 1
                continue
            decided += 1
            key = (build["torch"], build["cuda"])
            if build["fits"] is True and not (key in GROUND and driver_runs(driver, build["cuda"])
                                              and all(code_runs(g, GROUND[key]) for g in gpus)
                                              and all(not_beyond_last_branch(driver, g) for g in gpus)):
                false_fits.append((name, key))
    builds = len(answers[MACHINES[0][0]]["builds"])
    print("torch matrix: %d machines x %d builds: %d decided, %d undecided, %d false fits"
          % (len(MACHINES), builds, decided, undecided, len(false_fits)))
    assert len(MACHINES) >= 20 and false_fits == []
    assert decided + undecided == len(MACHINES) * builds and decided >= 1107


def test_every_listed_build_is_in_every_answer(answers):
    listed = {(b["torch"], b["cuda"]) for b in answers[MACHINES[0][0]]["builds"]}
    assert ("1.12", "10.2") in listed and all({(b["torch"], b["cuda"]) for b in a["builds"]} == listed
                                              for a in answers.values())


def test_a_pascal_card_on_an_r470_cluster_gets_a_cu118_build(answers):
    # R470 is CUDA 11.4: a CUDA 11.8 build runs through minor-version compatibility, and torch 2.5's
    # cu118 build script lists 6.0, whose SASS runs on 6.1 (2.6 and 2.7 cu118 have no known list).
    out = answers["GTX 1080 Ti on an R470 cluster"]
    assert (out["recommended"]["torch"], out["recommended"]["cuda"]) == ("2.5", "11.8")
    assert out["recommended"]["install"]["pip"].endswith("download.pytorch.org/whl/cu118")


def test_kepler_gets_the_newest_build_with_sm_37_and_sm_35_gets_none(answers):
    k80 = answers["Tesla K80 on R470"]
    assert (k80["recommended"]["torch"], k80["recommended"]["cuda"]) == ("2.5", "11.8")
    assert answers["K40 on R440"]["recommended"] is None
