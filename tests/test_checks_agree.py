"""One check, one answer: `explain` and `doctor` run on the same hand-made host state give the same
level and message for every check they share (a check is written once, so they cannot disagree)."""

import json

import pytest

from tests import kits
from tests.conftest import SCRIPTS

CUDA_HOME_UNSET = "OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA install root."


def shared(host, env, text):
    """{id: (level, message)} of the checks explain ran for `text` that doctor also shows, and doctor's."""
    explained = json.loads(host.run("explain", text, "--json", env=env, timeout=300).stdout)
    mine = {c["id"]: (c["level"], c["message"]) for m in explained["matches"] for c in m["checks"]}
    doctor = json.loads(host.run("doctor", "--json", env=env, timeout=300).stdout)
    theirs = {c["id"]: (c["level"], c["message"]) for c in doctor["checks"]}
    common = set(mine) & set(theirs)
    return {i: mine[i] for i in common}, {i: theirs[i] for i in common}


def wrapper_nvcc(host):
    """/usr/local/bin/nvcc a script exec-ing the 13.0 toolkit's nvcc (a machine set up by hand): torch
    would take CUDA_HOME=/usr/local, which is no toolkit root."""
    kit = kits.install_classic(kits.cuda13("13.0"), host.path("/usr/local/cuda-13.0"), "13.0")
    bindir = host.path("/usr/local/bin")
    bindir.mkdir(parents=True)
    (bindir / "nvcc").write_text('#!/bin/sh\nexec %s/bin/nvcc "$@"\n' % kit)
    (bindir / "nvcc").chmod(0o755)
    return {"PATH": "%s:%s:/usr/bin:/bin" % (bindir, SCRIPTS)}


@pytest.mark.parametrize("state", ["no toolkit", "wrapper nvcc"])
def test_explain_and_doctor_agree_on_cuda_home(host, state):
    env = wrapper_nvcc(host) if state == "wrapper nvcc" else {"PATH": SCRIPTS + ":/usr/bin:/bin"}
    mine, theirs = shared(host, env, CUDA_HOME_UNSET)
    assert "env.torch_cuda_home" in mine
    assert mine == theirs
    if state == "wrapper nvcc":  # the contradiction that was: explain said ok for CUDA_HOME=/usr/local
        assert mine["env.torch_cuda_home"][0] == "warning" and "not a toolkit root" in mine["env.torch_cuda_home"][1]


def test_each_check_id_is_made_in_one_module():
    """A check id is produced (`check("id", ...)`) by one module only, so two commands cannot word
    the same finding two ways (explain and doctor used to build env.torch_cuda_home each their own)."""
    import re
    from pathlib import Path

    package = Path(__file__).resolve().parent.parent / "cudaswitch"
    made = {}
    for path in package.rglob("*.py"):
        for check_id in re.findall(r"\b_?check\(\s*\"([a-z_]+\.[a-z_]+)\"", path.read_text(encoding="utf-8")):
            made.setdefault(check_id, set()).add(str(path.relative_to(package)))
    assert len(made) > 40  # the scan sees the checks at all
    assert {i: sorted(m) for i, m in made.items() if len(m) > 1} == {}
