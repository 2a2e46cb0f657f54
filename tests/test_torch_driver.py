"""`cudaswitch torch --driver X --gpu Y` for another machine: the driver's side (a branch drives only
the GPUs it knows; Maxwell, Pascal and Volta end at R580), one rule for every form of --driver, and
"cannot tell" for rows without evidence. Each case is one a user really asks: a GTX 1080 Ti on an
R550 box (uv's auto backend hands it cu128: astral-sh/uv#14742), an RTX 5090 put into an R550 box,
an H100 on an old R470 cluster node. Runs the real command with a Python that has no torch."""

import json
import subprocess
import sys

import pytest


@pytest.fixture
def bare(host, tmp_path):
    """(host, a python without torch): the answer then rests on the table alone."""
    venv = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    return host, str(venv / "bin" / "python")


def ask(bare, driver, *gpus, human=False):
    host, python = bare
    args = ["torch", "--python", python, "--driver", driver] + [a for g in gpus for a in ("--gpu", g)]
    proc = host.run(*(args if human else args + ["--json"]), timeout=300)
    assert proc.returncode in (0, 1) and proc.stderr == "", proc.stderr
    return proc if human else dict(json.loads(proc.stdout), exit=proc.returncode)


def cuda_of(build):
    return tuple(int(p) for p in build["cuda"].split("."))


def test_pascal_on_r550_gets_no_cu128_build_and_a_cu126_one(bare):
    out = ask(bare, "550.54", "sm_61")
    assert [b for b in out["builds"] if cuda_of(b) >= (12, 8) and b["fits"]] == []
    fitting = [b for b in out["builds"] if b["fits"]]
    assert {b["cuda"] for b in fitting} == {"12.6", "12.4", "12.1", "11.8", "11.7", "11.6", "11.3", "10.2"}
    best = out["recommended"]
    assert best["cuda"] == "12.6" and best["evidence"] != "none" and "sm_60" in best["arch"]
    assert best["install"]["pip"] == 'pip install "torch==%s.*" --index-url https://download.pytorch.org/whl/cu126' \
        % best["torch"]
    assert out["driver"]["branch"] == 550 and out["driver"]["cuda"] == "12.4"


def test_blackwell_on_r550_fits_nothing_and_names_the_branch(bare):
    out = ask(bare, "550.54", "sm_120")
    assert all(b["fits"] is False for b in out["builds"]) and out["recommended"] is None
    assert "R570" in out["reason"] and out["exit"] == 1
    human = ask(bare, "550.54", "sm_120", human=True)
    assert human.returncode == 1 and "recommended: none (driver R550 cannot drive sm_120: it needs R570" in human.stdout


def test_blackwell_on_r580_fits_cu128_and_newer(bare):
    out = ask(bare, "580.95", "sm_120")
    for build in out["builds"]:
        if build["evidence"] == "none":
            assert build["fits"] is None
        elif cuda_of(build) >= (12, 8):
            assert build["fits"] is True, build
        else:
            assert build["fits"] is False, build  # cu126 and older have no sm_120 code
    assert out["recommended"]["torch"] == "2.15" and out["exit"] == 0


def test_hopper_on_r470_fits_nothing(bare):
    out = ask(bare, "470.82", "sm_90")
    assert all(b["fits"] is False for b in out["builds"]) and out["recommended"] is None
    assert "R520" in out["reason"] and "derived" in out["reason"] and out["exit"] == 1


def test_pascal_after_r580_is_no_longer_driven(bare):
    out = ask(bare, "590.44.01", "sm_61")
    assert all(b["fits"] is False for b in out["builds"])
    assert "R580 is the last branch" in out["reason"]


def test_a_row_without_evidence_cannot_tell_and_is_never_recommended(bare):
    """torch 2.14's cu126 build exists (RELEASE.md) but nothing read its list: for a Pascal GPU on a
    driver that runs cu126, it says it cannot tell, and a build with evidence is recommended."""
    out = ask(bare, "580.95", "sm_61")
    row = [b for b in out["builds"] if (b["torch"], b["cuda"]) == ("2.14", "12.6")][0]
    assert row["evidence"] == "none" and row["fits"] is None
    assert out["recommended"]["evidence"] != "none" and out["recommended"]["torch"] != "2.14"
    human = ask(bare, "580.95", "sm_61", human=True).stdout
    assert "unknown torch 2.14  cu126  cannot tell: no evidence for its arch list [no evidence]" in human


@pytest.mark.parametrize("forms", [("525", "12.0", "525.60.13"), ("550", "12.4", "550.54.14"),
                                   ("580", "13.0", "580.65.06")])
def test_branch_cuda_and_release_forms_are_one_driver(bare, forms):
    """A bare branch is its lowest release, a CUDA version the lowest release that supports it:
    --driver 525 and --driver 12.0 used to give different answers for the same driver."""
    answers = []
    for form in forms:
        out = ask(bare, form, "sm_86")
        answers.append((out["driver"]["release"], out["driver"]["cuda"],
                        [(b["torch"], b["cuda"], b["fits"]) for b in out["builds"]]))
    assert answers[0] == answers[1] == answers[2] and answers[0][0] == forms[2]


def test_minor_version_compatibility_floor_of_12x(bare):
    """12.x builds run on a 12.0-era driver only from 525.60.13 on: a release just below that (an
    R520 driver, CUDA 11.8) cannot run cu126."""
    below = ask(bare, "520.61.05", "sm_86")
    at = ask(bare, "525.60.13", "sm_86")
    pick = lambda out: {(b["torch"], b["cuda"]): b["fits"] for b in out["builds"]}  # noqa: E731
    assert pick(below)[("2.9", "12.6")] is False and pick(at)[("2.9", "12.6")] is True


def test_an_installed_torch_newer_than_the_table_says_so(host, tmp_path):
    """Mirrors a user on a torch release published after this cudaswitch's table was made."""
    from tests.verify_support import venv_with_torch_package

    python = venv_with_torch_package(tmp_path, "newer", {
        "__init__.py": "__version__ = '2.16.0+cu132'\nfrom torch import version, _C\n",
        "version.py": "cuda = '13.2'\n",
        "_C.py": "def _cuda_getArchFlags():\n    return 'sm_75 sm_80 sm_86 sm_90 sm_100 sm_120'\n"})
    out = json.loads(host.run("torch", "--json", "--python", python, "--driver", "580.95", "--gpu", "sm_86",
                              timeout=300).stdout)
    assert "does not know torch 2.16 yet" in out["table"]["note"] and out["table"]["newest"] == "2.15"
    assert out["keep"] is True and out["recommended"]["installed"] == "2.16.0+cu132"
    human = host.run("torch", "--python", python, "--driver", "580.95", "--gpu", "sm_86", timeout=300).stdout
    assert "table: the table does not know torch 2.16 yet" in human
    assert "recommended: keep the installed torch 2.16.0+cu132" in human
