"""Shared fixtures: a test host under CUDASWITCH_ROOT built from real toolkits (tests/kits.py),
and a runner for the real `cudaswitch` command with every cudaswitch dir pointed into tmp."""

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests import kits
from tests.tiers import SLOW_MODULES

HOME = "/home/tester"  # HOME as seen on the test host; files live at ROOT/home/tester
# The script pip installed beside this interpreter, not a launcher shim (pyenv's rewrites PATH).
SCRIPTS = sysconfig.get_path("scripts")
CUDASWITCH = shutil.which("cudaswitch", path=SCRIPTS) or sys.exit("cudaswitch is not installed: pip install -e .[test]")


class Host:
    """A fake host root holding real toolkits, plus the env that makes cudaswitch look at it."""

    def __init__(self, root: Path, work: Path):
        self.root, self.work = root, work
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("CUDA", "CONDA", "SPACK", "VIRTUAL_ENV", "LMOD", "MODULE", "__LMOD",
                                         "_ModuleTable", "LD_LIBRARY_PATH"))}
        self.env["PATH"] = SCRIPTS + os.pathsep + self.env.get("PATH", "")  # shells find the same script
        self.env.update({
            "CUDASWITCH_ROOT": str(root), "HOME": HOME,
            "CUDASWITCH_CACHE_DIR": str(work / "cache"), "CUDASWITCH_CONFIG_DIR": str(work / "config"),
            "CUDASWITCH_DATA_DIR": str(work / "data"),
        })

    def path(self, hostpath: str) -> Path:
        return self.root / hostpath.lstrip("/")

    def run(self, *args, env=None, check=False, timeout=120, cwd=None):
        proc = subprocess.run([CUDASWITCH, *args], capture_output=True, text=True, timeout=timeout,
                              env={**self.env, **(env or {})}, cwd=cwd, stdin=subprocess.DEVNULL)
        if check and proc.returncode != 0:
            raise AssertionError("cudaswitch %s failed (%d): %s" % (args, proc.returncode, proc.stderr))
        return proc

    def list_json(self, *extra):
        return {item["root"]: item for item in json.loads(self.run("list", "--json", *extra, check=True).stdout)}


def build_standard_host(root: Path, work: Path) -> Host:
    """The standard test host: system 13.0 (as this machine's: no version.json) and 13.1, a runtime-only
    12.4, /usr/local/cuda -> cuda-13.0, Lmod module cuda/13.1 -> the 13.1 root, a conda env with
    cuda-nvcc 13.0, and a venv holding the CUDA 13.0 wheels."""
    host = Host(root, work)
    kits.install_classic(kits.cuda13("13.0"), host.path("/usr/local/cuda-13.0"), "13.0", version_json=False)
    kits.install_classic(kits.cuda13("13.1"), host.path("/usr/local/cuda-13.1"), "13.1")
    kits.install_classic_runtime12(host.path("/usr/local/cuda-12.4"))
    os.symlink("/usr/local/cuda-13.0", host.path("/usr/local/cuda"))
    conda = host.path(HOME + "/miniconda3/envs/cu13")
    kits.conda_env(conda, "cuda-nvcc-13")
    kits.venv_with_wheels(host.path("/opt/venv"), "13.0")
    modulepath = work / "modules"
    kits.write_cuda_module(modulepath, "13.1", host.path("/usr/local/cuda-13.1"))
    host.env.update(kits.lmod_env(modulepath))
    host.env["VIRTUAL_ENV"] = "/opt/venv"
    return host


@pytest.fixture(scope="session")
def standard_host(tmp_path_factory):
    base = tmp_path_factory.mktemp("host")
    return build_standard_host(base / "root", base / "work")


@pytest.fixture
def host(tmp_path):
    """An empty host root for tests that lay out their own edge cases."""
    (tmp_path / "root").mkdir()
    return Host(tmp_path / "root", tmp_path / "work")


def pytest_collection_modifyitems(items):
    """The slow tier by module (tests/tiers.py): one list, so a file never has to say it itself."""
    for item in items:
        if item.module.__name__.rpartition(".")[2] in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
