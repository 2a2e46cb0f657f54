"""One answer to "which toolkit is active", whichever command asks: `list`'s mark, `current`,
`which` and `doctor` all go by what the shell really runs (the first nvcc on PATH, else CUDA_HOME),
through the one registry object (switch/registry.py)."""

import json
import os
import subprocess

from tests.conftest import CUDASWITCH


def shell_after_use(host, request):
    """The environment a shell has after `eval "$(cudaswitch use REQUEST)"`."""
    switch = json.loads(host.run("use", request, "--shell", "json", check=True).stdout)
    env = {k: v for k, v in host.env.items() if k not in switch["unset"]}
    env.update(switch["set"])
    return env


def run(env, *args):
    proc = subprocess.run([CUDASWITCH, *args], env=env, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_a_hand_set_nvcc_after_a_switch_is_the_active_toolkit_for_every_command(standard_host):
    """A user switched to 13.1, then an rc file or a build script put 13.0's bin first on PATH:
    `nvcc` now runs 13.0's. list, current, which and doctor must all say 13.0 is active (list and
    doctor used to go by the switch's state and said 13.1 while current said 13.0)."""
    host = standard_host
    root_130 = str(host.path("/usr/local/cuda-13.0"))
    env = shell_after_use(host, "13.1")
    env["PATH"] = root_130 + "/bin" + os.pathsep + env["PATH"]
    listed = {item["root"]: item for item in json.loads(run(env, "list", "--json"))}
    assert [root for root, item in listed.items() if item["active"]] == [root_130]
    assert json.loads(run(env, "current", "--json"))["root"] == root_130
    assert run(env, "which").strip() == root_130
    checks = {c["id"]: c for c in json.loads(run(env, "doctor", "--json"))["checks"]}
    assert checks["toolkit.active"]["message"] == "CUDA %s at %s is active in this shell" % (
        listed[root_130]["version"], root_130)


def test_the_switched_toolkit_is_active_in_list_and_current(standard_host):
    """Right after `use 13.1`, list marks 13.1 and only 13.1, and current names it."""
    host = standard_host
    root_131 = str(host.path("/usr/local/cuda-13.1"))
    env = shell_after_use(host, "13.1")
    listed = json.loads(run(env, "list", "--json"))
    assert [item["root"] for item in listed if item["active"]] == [root_131]
    assert json.loads(run(env, "current", "--json"))["root"] == root_131


def test_a_dangling_toolkit_link_does_not_stop_the_registry_cache(host):
    """A host with a dead /usr/local/cuda-12.1 link (a toolkit removed by hand) lists it as broken,
    and the second `list` answers from the cache instead of discovering the host again (a record
    without a version made the whole cache look foreign, so every command rediscovered)."""
    host.path("/usr/local").mkdir(parents=True)
    os.symlink("/usr/local/cuda-12.1-removed", host.path("/usr/local/cuda-12.1"))
    first = json.loads(host.run("list", "--json", check=True).stdout)
    assert [(item["status"], item["version"]) for item in first] == [("broken", None)]
    [cache] = [p for p in (host.work / "cache").iterdir() if p.name.startswith("registry")]
    written = cache.stat().st_mtime_ns
    second = json.loads(host.run("list", "--json", check=True).stdout)
    assert second == first
    assert cache.stat().st_mtime_ns == written
