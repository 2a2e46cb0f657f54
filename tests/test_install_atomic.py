"""`install` and `uninstall`: an install interrupted midway (Ctrl-C, SIGTERM, SIGKILL)
leaves no toolkit behind and a retry works; two installs of one version at once give one good tree;
uninstall removes only managed toolkits and refuses the active one without --force.

"Midway" is made deterministic with the install's test hook CUDASWITCH_TEST_PAUSE_UNPACK=SECONDS:
after the first file of the first wheel is written the install says so on stderr and sleeps."""

import json
import os
import select
import signal
import subprocess
import time

import pytest

from tests import kits
from tests.conftest import CUDASWITCH
from tests.install_support import drop_installed_trees, managed_items, toolkits_dir  # noqa: F401 (autouse fixture)

PAUSED = "test hook: unpack paused"


def start_install(host, pause=None):
    env = dict(host.env)
    if pause:
        env["CUDASWITCH_TEST_PAUSE_UNPACK"] = str(pause)
    return subprocess.Popen([CUDASWITCH, "install", "13.0"], env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def read_until(proc, marker, timeout=300):
    """stderr lines of proc up to and including the first that contains marker."""
    lines, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stderr], [], [], 1.0)
        if ready:
            line = proc.stderr.readline()
            if not line:
                break
            lines.append(line)
            if marker in line:
                return lines
    proc.kill()
    raise AssertionError("no %r from the install; it said: %s" % (marker, "".join(lines)))


def entries(host):
    return sorted(os.listdir(toolkits_dir(host)))


def partial_build(host):
    """The build dir of the paused install, checked to hold unpacked files already."""
    [build] = [e for e in entries(host) if e.startswith(".tmp-")]
    files = [f for _, _, names in os.walk(toolkits_dir(host) / build / "tree") for f in names]
    assert files, "the install paused before writing anything"
    return build


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupted_install_leaves_nothing_and_retry_works(host, signum):
    proc = start_install(host, pause=120)
    read_until(proc, PAUSED)
    partial_build(host)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted; nothing was installed" in err
    assert [e for e in entries(host) if not e.startswith(".lock-")] == []
    assert managed_items(host) == []
    again = host.run("install", "13.0", timeout=600)
    assert again.returncode == 0, again.stderr
    [item] = managed_items(host)
    assert item["status"] == "ok" and item["short"] == "13.0"


def test_killed_install_is_cleaned_by_the_next(host):
    proc = start_install(host, pause=120)
    read_until(proc, PAUSED)
    build = partial_build(host)
    proc.kill()  # SIGKILL: no cleanup can run in the process itself
    proc.communicate(timeout=60)
    assert build in entries(host)
    assert managed_items(host) == []  # the dot-named leftover is never listed
    again = host.run("install", "13.0", timeout=600)
    assert again.returncode == 0, again.stderr
    assert build not in entries(host)
    assert [e for e in entries(host) if e.startswith(".tmp-")] == []
    [item] = managed_items(host)
    assert item["status"] == "ok"


def test_two_concurrent_installs_of_one_version_give_one_good_tree(host):
    first = start_install(host, pause=6)
    read_until(first, PAUSED)
    second = start_install(host)
    waited = read_until(second, "waiting for another cudaswitch working on")
    out1, err1 = first.communicate(timeout=600)
    out2, err2 = second.communicate(timeout=600)
    assert first.returncode == 0, err1
    assert second.returncode == 0, "".join(waited) + err2
    assert "installed CUDA 13.0." in err1 and "is already installed at" in err2
    [item] = managed_items(host)
    assert item["status"] == "ok"
    assert [e for e in entries(host) if not e.startswith(".lock-")] == [os.path.basename(item["root"])]
    version = subprocess.run([item["nvcc"], "--version"], capture_output=True, text=True, timeout=60)
    assert "release 13.0," in version.stdout


def apply_use(host, request):
    """The environment a shell has after `eval "$(cudaswitch use REQUEST)"`."""
    switch = json.loads(host.run("use", request, "--shell", "json", check=True).stdout)
    env = {k: v for k, v in host.env.items() if k not in switch["unset"]}
    env.update(switch["set"])
    return env


def test_uninstall_refuses_the_active_toolkit_unless_forced(host):
    host.run("install", "13.0", check=True, timeout=600)
    [item] = managed_items(host)
    active_env = apply_use(host, "managed:13.0")
    refused = host.run("uninstall", "13.0", env=active_env)
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        "cudaswitch: error: CUDA %s at %s is active in this shell (run `eval \"$(cudaswitch off)\"` first, "
        "or pass --force)" % (item["version"], item["root"]))
    assert os.path.isdir(item["root"])
    forced = host.run("uninstall", "13.0", "--force", env=active_env)
    assert forced.returncode == 0, forced.stderr
    assert "it was active in this shell" in forced.stderr
    assert not os.path.exists(item["root"]) and managed_items(host) == []
    assert [e for e in entries(host) if not e.startswith(".lock-")] == []


def test_uninstall_by_release_and_leaves_other_sources_alone(host):
    # mirrors a host with NVIDIA's runtime-only 12.4 in /usr/local beside a managed 13.0
    kits.install_classic_runtime12(host.path("/usr/local/cuda-12.4"))
    host.run("install", "13.0", check=True, timeout=600)
    [item] = managed_items(host)
    system = host.run("uninstall", "12.4")
    assert system.returncode == 1
    assert "is not managed by cudaswitch (source: system)" in system.stderr
    assert host.path("/usr/local/cuda-12.4/lib64").is_dir()
    missing = host.run("uninstall", "13.1")
    assert missing.returncode != 0
    assert missing.stderr.strip() == ("cudaswitch: error: no managed toolkit matches '13.1' "
                                      "(installed: %s)" % os.path.basename(item["root"]))
    release = os.path.basename(item["root"])  # 13.0.x the release, while nvcc says 13.0.yy
    removed = host.run("uninstall", release)
    assert removed.returncode == 0, removed.stderr
    assert "removed CUDA %s (nvcc %s) from %s" % (release, item["version"], item["root"]) in removed.stderr
    assert managed_items(host) == [] and not os.path.exists(item["root"])


def process_ends(pid, within=10.0):
    """True once pid is gone or a zombie (SIGKILL is delivered asynchronously; an orphan's zombie
    waits for init to reap it)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with open("/proc/%d/stat" % pid) as handle:
                if handle.read().rpartition(")")[2].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


def test_sigterm_during_the_index_lookup_leaves_no_scratch_and_no_pip(host, tmp_path):
    """Mirrors a slow or hanging index: the pip cudaswitch runs (CUDASWITCH_PIP, here a script
    that starts a helper and sleeps) is still looking up cuda-toolkit when the install is stopped."""
    scratch, helper_pid = tmp_path / "tmp", tmp_path / "helper.pid"
    scratch.mkdir()
    hanging_pip = tmp_path / "pip"
    hanging_pip.write_text("#!/bin/sh\nsleep 300 &\necho $! > %s\necho 'Collecting cuda-toolkit'\nwait\n" % helper_pid)
    hanging_pip.chmod(0o755)
    env = dict(host.env, CUDASWITCH_PIP=str(hanging_pip), TMPDIR=str(scratch))
    proc = subprocess.Popen([CUDASWITCH, "install", "13.0"], env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (helper_pid.exists() and helper_pid.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert os.listdir(scratch), "the install made no scratch dir for the lookup"
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and out == ""
    assert err.splitlines() == ["cudaswitch: error: install of CUDA 13.0 interrupted; nothing was installed"]
    assert os.listdir(scratch) == []
    assert process_ends(int(helper_pid.read_text())), "pip's helper was left running"
    assert not (host.work / "data").exists()
