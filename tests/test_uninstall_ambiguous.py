"""`uninstall` with a request that matches several managed toolkits removes none and lists them
(as pyenv does); an exact one removes just that. Toolkits made by the real `install --from pypi`
from local wheels (tests/release_wheels.py)."""

import os

import pytest

from tests import release_wheels
from tests.install_support import drop_installed_trees, toolkits_dir  # noqa: F401 (autouse fixture)


@pytest.fixture()
def two_installed(host, tmp_path):
    env = release_wheels.index_of(tmp_path / "links", "13.1.0.0", "13.2.0.0")
    for release in ("13.1", "13.2"):
        proc = host.run("install", release, "--from", "pypi", "-c", "cudart", env=env, timeout=300)
        assert proc.returncode == 0, proc.stderr
    return host


def installed(host):
    return sorted(n for n in os.listdir(toolkits_dir(host)) if not n.startswith("."))


def test_a_request_matching_two_removes_nothing_and_names_both(two_installed):
    proc = two_installed.run("uninstall", "13")
    assert proc.returncode != 0 and proc.stdout == ""
    [line] = proc.stderr.splitlines()
    assert "'13' matches 2 managed toolkits: 13.1.0, 13.2.0" in line and "Traceback" not in line
    assert installed(two_installed) == ["13.1.0", "13.2.0"]


def test_an_exact_request_removes_only_that_one(two_installed):
    proc = two_installed.run("uninstall", "13.2")
    assert proc.returncode == 0, proc.stderr
    assert "removed CUDA 13.2.0" in proc.stderr
    assert installed(two_installed) == ["13.1.0"]
