"""`use conda:13.0` inside an activated conda env (`conda activate cu13`: the env's bin first on
PATH, CONDA_PREFIX set) keeps that env's python and pip first on PATH: a user who switches to the
env's own nvcc still runs the env's Python (one trial saw `python` gone until `off`). The env is
real-shaped (tests/kits.conda_env: bin/ holding python, pip, nvcc, ptxas; lib/ holding libstdc++),
and the switch runs in a real bash."""

import os

from tests import kits, shellrun
from tests.conftest import HOME

ENV = HOME + "/miniconda3/envs/cu13"


def activated(host):
    """The host env after `conda activate cu13`, as conda's shell hook leaves it."""
    env_dir = host.path(ENV)
    kits.conda_env(env_dir, "cuda-nvcc-13")
    return {**host.env, "PATH": "%s/bin:/usr/bin:/bin:%s" % (env_dir, host.env["PATH"]),
            "CONDA_PREFIX": str(env_dir), "CONDA_DEFAULT_ENV": "cu13", "CONDA_SHLVL": "1"}


def test_use_conda_keeps_the_envs_python_and_pip_first(host):
    env = activated(host)
    env_dir = host.path(ENV)
    out = shellrun.script("bash", [
        'eval "$(cudaswitch use conda:13.0 --no-verify)" || exit 9',
        'echo "python=$(command -v python)"', 'echo "pip=$(command -v pip)"',
        'echo "nvcc=$(command -v nvcc)"', 'echo "ptxas=$(command -v ptxas)"',
        'echo "ld=$LD_LIBRARY_PATH"', 'python; pip',
        'eval "$(cudaswitch off)"', 'echo "after=$PATH"',
    ], env)
    assert out.returncode == 0, out.stderr
    said = dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)
    assert said["python"] == "%s/bin/python" % env_dir
    assert said["pip"] == "%s/bin/pip" % env_dir
    assert "conda-python\nconda-pip\n" in out.stdout  # the env's own, run by name
    # nvcc and ptxas are the env's toolkit's (through a view or the env's bin itself)
    for tool in ("nvcc", "ptxas"):
        assert os.path.realpath(said[tool]) == os.path.realpath(env_dir / "bin" / tool), said[tool]
    assert said["after"] == env["PATH"]
