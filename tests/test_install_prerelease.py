"""A release candidate of NVIDIA's cuda-toolkit wheels is never taken for a release: `install
--list --from pypi` leaves it out unless --pre asks (then labels it), and `install X --from pypi`
refuses one unless --pre or the exact rc version asks; one installed says what it is."""

import json

import pytest

from tests import release_wheels
from tests.install_support import drop_installed_trees, managed_items  # noqa: F401 (autouse fixture)


@pytest.fixture()
def rc_index(tmp_path):
    """The final 13.3.0 and the release candidate 13.4.0rc1."""
    return release_wheels.index_of(tmp_path / "links", "13.3.0.0", "13.4.0rc1")


def test_list_leaves_out_the_release_candidate_and_says_so(host, rc_index):
    proc = host.run("install", "--list", "--from", "pypi", env=rc_index, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert [line.split()[0] for line in proc.stdout.splitlines()[1:]] == ["13.3.0"]
    assert "13.4.0rc1" in proc.stderr and "--pre" in proc.stderr


def test_list_with_pre_labels_the_release_candidate(host, rc_index):
    proc = host.run("install", "--list", "--from", "pypi", "--pre", "--json", env=rc_index, timeout=300)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)["releases"]
    assert [(r["release"], r["pre_release"]) for r in rows] == [("13.4.0rc1", True), ("13.3.0", False)]
    table = host.run("install", "--list", "--from", "pypi", "--pre", env=rc_index, timeout=300).stdout
    [rc_line] = [line for line in table.splitlines() if line.startswith("13.4.0rc1")]
    assert "pre-release" in rc_line


def test_install_of_a_release_refuses_the_release_candidate(host, rc_index):
    proc = host.run("install", "13.4.0", "--from", "pypi", "-c", "cudart", env=rc_index, timeout=300)
    assert proc.returncode != 0 and proc.stdout == ""
    [line] = proc.stderr.splitlines()
    assert "13.4.0rc1 is a pre-release" in line and "--pre" in line, line
    assert managed_items(host) == []


def test_a_major_request_takes_the_release_not_the_candidate(host, rc_index):
    proc = host.run("install", "13", "--from", "pypi", "-c", "cudart", "--json", env=rc_index, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["version"] == "13.3.0"


@pytest.mark.parametrize("args", [("13.4", "--pre"), ("13.4.0rc1",)])
def test_asked_for_the_candidate_is_installed_and_labelled(host, rc_index, args):
    proc = host.run("install", *args, "--from", "pypi", "-c", "cudart", "--json", env=rc_index, timeout=300)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["version"] == "13.4.0rc1" and result["pre_release"] is True
    assert "installed CUDA 13.4.0rc1 (pre-release) at" in proc.stderr
    assert result["root"].endswith("/toolkits/13.4.0rc1")
