"""the verdict `use` prints is cached by what it depends on; a repeated call with
nothing changed starts no process (no probe, no subprocess) and imports nothing heavy."""

import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import kits
from tests.verify_support import build_libcuda, torch_venv

REPO = Path(__file__).resolve().parent.parent
HEAVY = ("json", "re", "typing", "dataclasses", "tomllib", "packaging", "subprocess", "enum", "typer")


@pytest.fixture
def setup(host, tmp_path):
    """(paths, record, new_env, log): 13.1 under ROOT, the torch venv first on PATH, probes logged."""
    from cudaswitch.switch import envdiff
    from cudaswitch.registry import discover
    from cudaswitch.paths import Paths
    from cudaswitch.registry.resolve import resolve

    kits.install_classic(kits.cuda13("13.1"), host.path("/usr/local/cuda-13.1"), "13.1")
    log = tmp_path / "probes.log"
    env = dict(host.env, PATH=str(torch_venv() / "bin") + os.pathsep + host.env["PATH"],
               CUDASWITCH_PROBE_LOG=str(log), CUDASWITCH_LIBCUDA=str(build_libcuda(tmp_path, 13010)))
    paths = Paths(env)
    record = resolve(discover.load(paths, env), "13.1")
    return paths, record, envdiff.switch_env(env, record, "shell")[0], log


def probes(log):
    return log.read_text().split() if log.exists() else []


def test_repeated_use_starts_no_process(setup, monkeypatch):
    from cudaswitch.verify.quick import verdict_for_use

    paths, record, new_env, log = setup
    first = verdict_for_use(paths, record, new_env)
    assert first[0] == "warning" and "2.13.0+cpu" in first[1] and "CPU-only" in first[1]
    ran = probes(log)
    assert "torch_probe" in ran and "driver_probe" in ran

    def refuse(*args, **kwargs):
        raise AssertionError("a cached verdict started a process: %r" % (args[:1],))

    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr(os, "posix_spawn", refuse)
    assert verdict_for_use(paths, record, new_env) == first
    assert probes(log) == ran


def test_a_change_it_depends_on_runs_the_probe_again(setup, tmp_path):
    """A new driver library (another era) or a package installed into the Python re-verifies."""
    from cudaswitch.verify.quick import verdict_for_use

    paths, record, new_env, log = setup
    verdict_for_use(paths, record, new_env)
    count = len(probes(log))
    older = dict(new_env, CUDASWITCH_LIBCUDA=str(build_libcuda(tmp_path / "old", 12080)))
    level, line = verdict_for_use(paths, record, older)
    assert level == "error" and "12.8" in line and len(probes(log)) > count
    plain = tmp_path / "plain"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(plain)], check=True, timeout=120)
    other = dict(new_env, PATH=str(plain / "bin") + os.pathsep + new_env["PATH"])
    verdict_for_use(paths, record, other)
    count = len(probes(log))
    verdict_for_use(paths, record, other)
    assert len(probes(log)) == count
    (kits.site_packages(plain) / "newly_installed_pkg").mkdir()  # what `pip install` does to site-packages
    verdict_for_use(paths, record, other)
    assert len(probes(log)) > count


CHILD = r"""
import marshal, sys
before = set(sys.modules)
from cudaswitch.paths import Paths
from cudaswitch.verify.quick import verdict_for_use
env, record = marshal.loads(open(sys.argv[1], "rb").read())
print(verdict_for_use(Paths(env), record, env))
print(" ".join(sorted(set(sys.modules) - before)))
"""


def test_cache_hit_imports_nothing_heavy(setup, tmp_path):
    """In a fresh interpreter (-S: no site, so nothing is preloaded), as the fast path runs it."""
    from cudaswitch.verify.quick import verdict_for_use

    paths, record, new_env, log = setup
    expected = verdict_for_use(paths, record, new_env)
    ran = probes(log)
    data = tmp_path / "args.marshal"
    data.write_bytes(marshal.dumps((new_env, record)))
    proc = subprocess.run([sys.executable, "-S", "-c", CHILD, str(data)], capture_output=True, text=True,
                          timeout=60, env=dict(new_env, PYTHONPATH=str(REPO)))
    assert proc.returncode == 0, proc.stderr
    verdict, imported = proc.stdout.splitlines()
    assert verdict == str(expected)
    assert probes(log) == ran
    assert not set(imported.split()) & set(HEAVY), imported


def test_a_new_cudaswitch_release_verifies_again(setup, monkeypatch):
    """After an upgrade of cudaswitch a check it added must show on the next `use`: the release is
    part of the key, so the old entry is not a hit (and with the same release it still is)."""
    from cudaswitch.verify import identity
    from cudaswitch.verify.quick import verdict_for_use

    paths, record, new_env, log = setup
    verdict_for_use(paths, record, new_env)
    count = len(probes(log))
    verdict_for_use(paths, record, new_env)
    assert len(probes(log)) == count
    monkeypatch.setattr(identity, "__version__", identity.__version__ + ".post1")
    verdict_for_use(paths, record, new_env)
    assert "torch_probe" in probes(log)[count:]
