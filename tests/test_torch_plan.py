"""`cudaswitch torch`: which PyTorch CUDA builds run on a host. The driver and GPUs come from a real
libcuda stand-in (gcc-built, selected with CUDASWITCH_LIBCUDA) answering like a driver of each era
with each GPU; the installed torch is the real torch 2.14.1+cu130, whose own arch flags the answers
are checked against. The arch rule in this file is written out again on purpose: the test must not
trust the code it checks."""

import json
import re
import subprocess

import pytest

from tests import kits
from tests.verify_support import build_libcuda, torch_cuda_venv

CASES = [(12040, "sm_61"), (13000, "sm_61"), (13000, "sm_120"), (12080, "sm_90")]


@pytest.fixture(scope="module")
def real_torch():
    """(python, its own arch flags) of the real CUDA build of torch."""
    python = str(torch_cuda_venv() / "bin" / "python")
    out = subprocess.run([python, "-c", "import torch; print(torch.__version__); print(torch._C._cuda_getArchFlags())"],
                         capture_output=True, text=True, timeout=300, cwd="/").stdout.split("\n")
    assert out[0].startswith("2.14.1+cu130"), out
    return python, out[1].split()


@pytest.fixture(scope="module")
def torch_host(tmp_path_factory):
    """A host whose default toolkit is a real CUDA 13.0 (what extensions would be built with)."""
    from tests.conftest import Host

    base = tmp_path_factory.mktemp("torchplan")
    host = Host(base / "root", base / "work")
    kits.install_classic(kits.cuda13("13.0"), host.path("/usr/local/cuda-13.0"), "13.0")
    host.path("/usr/local/cuda").symlink_to("/usr/local/cuda-13.0")
    host.libs = base / "libs"
    return host


def runs_on(capability_sm, arch_list):
    """Does a build with `arch_list` have code for the GPU? Same-major SASS of a lower or equal minor,
    or PTX of a lower or equal capability (sm_90a is arch-specific: it runs on 9.0 only)."""
    major, minor = _split(capability_sm)
    for arch in arch_list:
        kind, (a_major, a_minor), specific = arch.split("_")[0], _split(arch), arch.endswith("a")
        if kind == "sm" and a_major == major and (a_minor == minor if specific else a_minor <= minor):
            return True
        if kind == "compute" and (a_major, a_minor) <= (major, minor):
            return True
    return False


def _split(arch):
    digits = re.search(r"(\d+)(\d)[a-z]?$", arch)
    return int(digits.group(1)), int(digits.group(2))


def expected_fits(build, gpu, driver_int):
    """False when the driver cannot run the build's CUDA or (with evidence) it has no code for the
    GPU; None (cannot tell) for a row without evidence; else True. The stand-in drivers here are
    all of branches that drive these GPUs."""
    if not driver_runs(driver_int, build["cuda"]):
        return False
    if build["evidence"] == "none":  # CUDA 13's nvcc emits nothing below sm_75 (`nvcc --list-gpu-arch`)
        return False if int(build["cuda"].split(".")[0]) >= 13 and _split(gpu) < (7, 5) else None
    return runs_on(gpu, build["arch"])


def driver_runs(driver_int, cuda):
    """A driver of CUDA D runs a build of CUDA X.Y when D >= X.Y or, minor-version compatibility,
    when both are the same major (12.x and 13.x drivers report at least x.0, above the floor)."""
    have = (driver_int // 1000, (driver_int % 1000) // 10)
    want = tuple(int(p) for p in cuda.split("."))
    return have >= want or have[0] == want[0]


def plan(host, python, *args, env=None):
    proc = host.run("torch", "--json", "--python", python, *args, env=env, timeout=600)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("driver_int,gpu", CASES)
def test_answer_holds_the_arch_and_runs_on_the_driver(torch_host, real_torch, driver_int, gpu):
    python, real_flags = real_torch
    lib = build_libcuda(torch_host.libs, driver_int, init_rc=0, gpus=[gpu])
    out = plan(torch_host, python, env={"CUDASWITCH_LIBCUDA": str(lib)})
    assert out["driver"]["cuda_source"] == "cuDriverGetVersion"
    assert [g["capability"] for g in out["gpus"]] == ["%d.%d" % _split(gpu)]
    best = out["recommended"]
    assert best is not None, out["reason"]
    assert runs_on(gpu, best["arch"]) and driver_runs(driver_int, best["cuda"])
    # The installed torch's own flags replace its row (the host wins), and its verdict follows them.
    [own] = [b for b in out["builds"] if b.get("source") == "installed"]
    assert own["arch"] == real_flags and own["installed"].startswith("2.14.1")
    assert own["fits"] == (runs_on(gpu, real_flags) and driver_runs(driver_int, "13.0"))
    assert out["installed_fits"] == own["fits"]
    for build in out["builds"]:  # never a build without the GPU's code, never one the driver cannot run
        assert build["fits"] is expected_fits(build, gpu, driver_int), build
    assert best["evidence"] != "none"
    assert best["install"]["pip"] == 'pip install "%s" --index-url https://download.pytorch.org/whl/%s' % (
        "torch==2.14.1" if best.get("installed") else "torch==%s.*" % best["torch"], best["variant"])
    assert best["install"]["uv"].startswith("UV_TORCH_BACKEND=%s " % best["variant"])
    assert "cuda-version=%s" % best["cuda"] in best["install"]["conda"]


def test_each_case_picks_the_build_a_user_needs(torch_host, real_torch):
    """The concrete picks: Pascal gets a cu126 build (no cu128/cu130 build has sm_61, the uv#14742
    trap); Blackwell on a 13.0 driver keeps the installed cu130 build, which the 13.0 toolkit can
    build extensions for; an H100 on a 12.8 driver cannot run cu130 and gets the newest cu128 whose
    list was read from its wheel."""
    python, _ = real_torch
    picks = {}
    for driver_int, gpu in CASES:
        lib = build_libcuda(torch_host.libs, driver_int, init_rc=0, gpus=[gpu])
        best = plan(torch_host, python, env={"CUDASWITCH_LIBCUDA": str(lib)})["recommended"]
        picks[(driver_int, gpu)] = (best["torch"], best["cuda"], best.get("source"))
        assert best["evidence"] != "none"
        extensions = [c for c in best["checks"] if c["id"] == "torch_build.extensions"][0]
        if gpu == "sm_61":  # the host's nvcc 13.0 has dropped Pascal: say so, whatever torch build
            assert extensions["level"] == "warning" and "cannot target sm_61" in extensions["message"]
        elif gpu == "sm_120":
            assert extensions["level"] == "ok"
    assert picks[(12040, "sm_61")][1] == "12.6" and picks[(13000, "sm_61")][1] == "12.6"
    assert picks[(13000, "sm_120")] == ("2.14", "13.0", "installed")
    assert picks[(12080, "sm_90")] == ("2.11", "12.8", "PT-issue-182250")  # newest with evidence for sm_90


@pytest.mark.parametrize("driver_int,gpu", CASES)
def test_driver_and_gpu_options_give_the_same_answer_without_a_driver(torch_host, real_torch, driver_int, gpu):
    """Planning for another machine from one without any driver (a Docker build, a login node)."""
    python, _ = real_torch
    lib = build_libcuda(torch_host.libs, driver_int, init_rc=0, gpus=[gpu])
    seen = plan(torch_host, python, env={"CUDASWITCH_LIBCUDA": str(lib)})
    cuda = "%d.%d" % (driver_int // 1000, (driver_int % 1000) // 10)
    release = {12040: "550.54.14", 13000: "580.65.06", 12080: "570.26"}[driver_int]
    branch = release.split(".")[0]  # a bare branch is its lowest release: the same driver
    for driver in (cuda, release, branch):
        given = plan(torch_host, python, "--driver", driver, "--gpu", gpu)
        assert given["driver"]["cuda"] == cuda
        assert _answers(given) == _answers(seen)


def _answers(out):
    best = out["recommended"]
    return (best and (best["torch"], best["cuda"]), [(b["torch"], b["cuda"], b["fits"]) for b in out["builds"]])


def test_no_driver_offers_nothing_as_fitting(torch_host, real_torch):
    """uv's auto backend falls back to the CPU index here; cudaswitch says it cannot tell, and how to ask."""
    python, _ = real_torch
    out = plan(torch_host, python)
    assert out["driver"]["present"] is False and out["gpus"] == []
    assert out["recommended"] is None and "--driver" in out["reason"]
    assert all(b["fits"] is None for b in out["builds"])
    human = torch_host.run("torch", "--python", python)
    assert human.returncode == 0 and "recommended: none" in human.stdout and "--gpu" in human.stdout


def test_two_gpus_need_a_build_for_both(torch_host, real_torch):
    """A 1080 Ti beside an RTX 5090 on a 13.0 driver: the old hand-typed table recommended 2.7 cu128
    for both (its Linux wheel starts at sm_75), and 2.6/2.7 cu126 for their compute_90 PTX (stripped
    from the release wheels). No build with evidence has code for both: nothing is offered."""
    python, _ = real_torch
    out = plan(torch_host, python, "--driver", "13.0", "--gpu", "sm_61", "--gpu", "sm_120")
    assert [b for b in out["builds"] if b["fits"]] == [] and out["recommended"] is None
    rows = {(b["torch"], b["cuda"]): b for b in out["builds"]}
    assert rows[("2.7", "12.8")]["fits"] is False and rows[("2.6", "12.6")]["fits"] is False
    # a Kepler GPU beside them: nothing has all three
    proc = torch_host.run("torch", "--python", python, "--driver", "13.0", "--gpu", "sm_61", "--gpu", "sm_120",
                          "--gpu", "sm_37")
    assert proc.returncode == 1 and "recommended: none" in proc.stdout


@pytest.mark.parametrize("args", [["--gpu", "sm_6x"], ["--gpu", "$(reboot)"], ["--driver", "new"],
                                  ["--driver", "12"], ["--driver", "99.9"], ["--driver", "550.54.14.1"],
                                  ["--python", "/nonexistent/python"]])
def test_bad_options_are_one_line_and_nothing_on_stdout(torch_host, args):
    proc = torch_host.run("torch", *args)
    assert proc.returncode == 2 and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1 and "error" in proc.stderr


def test_an_installed_build_the_data_does_not_know_is_judged_by_its_own_flags(torch_host, tmp_path):
    """Mirrors a self-built torch (TORCH_CUDA_ARCH_LIST="6.1;9.0+PTX" against CUDA 12.4): a hand-made
    torch package reporting that release and those arch flags, as the real one reports them."""
    from tests.verify_support import venv_with_torch_package

    python = venv_with_torch_package(tmp_path, "selfbuilt", {
        "__init__.py": "__version__ = '2.7.0a0+git1234'\nfrom torch import version, _C\n",
        "version.py": "cuda = '12.4'\n",
        "_C.py": "def _cuda_getArchFlags():\n    return 'sm_61 sm_90 compute_90'\n"})
    for gpu, fits in (("sm_61", True), ("sm_90", True), ("sm_120", True), ("sm_75", False)):
        out = plan(torch_host, python, "--driver", "12.8", "--gpu", gpu)
        [own] = [b for b in out["builds"] if b.get("source") == "installed"]
        assert (own["torch"], own["cuda"], own["arch"]) == ("2.7", "12.4", ["sm_61", "sm_90", "compute_90"])
        assert own["fits"] is fits and out["installed_fits"] is fits  # sm_120 runs the compute_90 PTX
        assert own["published"] is False and own["install"] is None  # not on any index to install from
        assert ((out["recommended"] or {}).get("source") == "installed") is fits
        assert out["keep"] is fits  # one that runs here is the answer: keep it
    human = torch_host.run("torch", "--python", python, "--driver", "12.8", "--gpu", "sm_75").stdout
    assert "installed: torch 2.7.0a0+git1234 in %s does NOT fit this host" % python in human


def test_a_driver_without_gpus_cannot_say_which_build_fits(torch_host, real_torch):
    """cuInit fails (100: no CUDA-capable device, as in a container without --gpus): the driver still
    rules out builds it cannot run, and nothing is offered as fitting."""
    python, _ = real_torch
    lib = build_libcuda(torch_host.libs, 12080, init_rc=100, gpus=["sm_90"])
    out = plan(torch_host, python, env={"CUDASWITCH_LIBCUDA": str(lib)})
    assert out["driver"]["cuda"] == "12.8" and out["gpus"] == [] and out["recommended"] is None
    assert "reports no GPU" in out["reason"] and "--gpu" in out["reason"]
    for build in out["builds"]:
        assert build["fits"] is (False if build["cuda"].startswith("13.") else None), build


def test_an_installed_torch_that_fits_is_kept(torch_host, real_torch):
    """An RTX 5090 on R580 with the real torch 2.14.1+cu130 installed: that torch is the answer (the
    old answer was a downgrade to what the default toolkit could build extensions for); building
    extensions is a line of its own, and newer builds do not displace it."""
    python, _ = real_torch
    out = plan(torch_host, python, "--driver", "580.95", "--gpu", "sm_120")
    assert out["keep"] is True and out["recommended"]["installed"].startswith("2.14.1")
    assert out["reason"] == "the installed torch fits this host: keep it"
    assert [b for b in out["builds"] if b["fits"] and b["torch"] == "2.15"]  # newer fits, still kept
    human = torch_host.run("torch", "--python", python, "--driver", "580.95", "--gpu", "sm_120").stdout
    lines = human.splitlines()
    keep = [i for i, line in enumerate(lines) if line.startswith("recommended: keep the installed torch 2.14.1+cu130")]
    assert keep and re.match(r"  extensions: toolkit 13\.0\S* matches CUDA 13\.0", lines[keep[0] + 1]), human
