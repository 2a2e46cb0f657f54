"""`local`, `current` and `system`: project files written safely, the reason for the active
toolkit, and /usr/local/cuda repointed by link swap or through real update-alternatives."""

import json
import os
import subprocess

import pytest

from tests import kits
from tests.conftest import CUDASWITCH


def test_local_writes_validated_cudaversion_and_current_explains(standard_host, tmp_path):
    proc = standard_host.run("local", "13.1", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / ".cudaversion").read_text() == "13.1\n"
    info = json.loads(standard_host.run("current", "--json", cwd=tmp_path / "").stdout)
    pin = info["pending"][0]  # no hook in this shell: named as the pin, not as what is in use
    assert pin["kind"] == "project" and pin["file"] == str(tmp_path / ".cudaversion")
    assert pin["root"] == str(standard_host.path("/usr/local/cuda-13.1"))
    refused = standard_host.run("local", "/usr/local/cuda-13.0", cwd=tmp_path)
    assert refused.returncode != 0 and refused.stderr.count("\n") == 1
    assert (tmp_path / ".cudaversion").read_text() == "13.1\n"  # untouched
    assert standard_host.run("local", "--unset", cwd=tmp_path).returncode == 0
    assert not (tmp_path / ".cudaversion").exists()


def test_current_without_project_is_the_system_default(standard_host, tmp_path):
    no_nvcc = {"PATH": os.path.dirname(CUDASWITCH) + ":/usr/bin:/bin"}  # this machine's PATH may hold one
    info = json.loads(standard_host.run("current", "--json", cwd=tmp_path, env=no_nvcc).stdout)
    assert info["reason"] == "system" and info["root"] == str(standard_host.path("/usr/local/cuda-13.0"))


def test_current_reports_an_explicit_use(standard_host, tmp_path):
    diff = json.loads(standard_host.run("use", "13.1", "--shell", "json").stdout)
    env = {**diff["set"]}
    info = json.loads(standard_host.run("current", "--json", env=env, cwd=tmp_path).stdout)
    assert info["reason"] == "shell" and info["version"].startswith("13.1")


@pytest.fixture
def system_host(host):
    """A host with real /usr/local/cuda-13.0 and -13.1 trees and /usr/local/cuda -> cuda-13.0."""
    for v in ("13.0", "13.1"):
        kits.install_classic(kits.cuda13(v), host.path("/usr/local/cuda-" + v), v)
    os.symlink("/usr/local/cuda-13.0", host.path("/usr/local/cuda"))
    return host


def test_system_swaps_the_link_atomically(system_host):
    dry = system_host.run("system", "13.1", "--dry-run")
    assert dry.returncode == 0 and os.readlink(system_host.path("/usr/local/cuda")) == "/usr/local/cuda-13.0"
    proc = system_host.run("system", "13.1")
    assert proc.returncode == 0, proc.stderr
    assert os.readlink(system_host.path("/usr/local/cuda")) == "/usr/local/cuda-13.1"
    assert sorted(os.listdir(system_host.path("/usr/local"))) == ["cuda", "cuda-13.0", "cuda-13.1"]


def test_system_without_permission_changes_nothing(system_host):
    """An immutable /usr/local refuses even root (EPERM), as a read-only NFS /usr/local would."""
    local = str(system_host.path("/usr/local"))
    made = subprocess.run(["chattr", "+i", local], capture_output=True, text=True, timeout=30)
    if made.returncode != 0:
        pytest.fail("chattr +i is needed for this test: " + made.stderr) if os.environ.get("CI") == "true" \
            else pytest.skip("chattr +i unsupported here: " + made.stderr)
    try:
        proc = system_host.run("system", "13.1")
    finally:
        subprocess.run(["chattr", "-i", local], timeout=30)
    assert proc.returncode != 0 and "permission denied" in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stdout == ""
    assert os.readlink(system_host.path("/usr/local/cuda")) == "/usr/local/cuda-13.0"
    assert sorted(os.listdir(local)) == ["cuda", "cuda-13.0", "cuda-13.1"]


def test_system_goes_through_update_alternatives_when_it_manages_the_link(system_host, tmp_path):
    """Mirrors NVIDIA's .deb toolkits: /usr/local/cuda -> /etc/alternatives/cuda -> cuda-13.0."""
    altdir, admindir = tmp_path / "alternatives", tmp_path / "admin"
    altdir.mkdir()
    admindir.mkdir()
    link = system_host.path("/usr/local/cuda")
    os.unlink(link)
    base = ["update-alternatives", "--altdir", str(altdir), "--admindir", str(admindir)]
    root130 = str(system_host.path("/usr/local/cuda-13.0"))
    subprocess.run(base + ["--install", str(link), "cuda", root130, "130"], check=True, timeout=30,
                   capture_output=True)
    env = {"CUDASWITCH_ALTDIR": str(altdir), "CUDASWITCH_ADMINDIR": str(admindir)}
    proc = system_host.run("system", "13.1", env=env)
    assert proc.returncode == 0, proc.stderr
    assert "update-alternatives" in proc.stderr
    query = subprocess.run(base + ["--query", "cuda"], capture_output=True, text=True, timeout=30).stdout
    assert "Value: %s" % system_host.path("/usr/local/cuda-13.1") in query
    assert os.path.realpath(link) == os.path.realpath(system_host.path("/usr/local/cuda-13.1"))
