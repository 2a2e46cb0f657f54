"""bad input gives one clear line or a `broken` status, and nothing is lost.

Each case is built in an empty test root (`host`) around a real toolkit from tests/kits.py; the
broken part is small and hand-made, and each test says which real failure it mirrors."""

import json
import marshal
import os
import pickle
import shutil
import subprocess
import time

import pytest

from cudaswitch.safeio import seal, unseal

from tests import kits
from tests.conftest import CUDASWITCH
from tests.registry_helpers import logging_toolkit, nvcc_version, runs


def classic13(host, hostpath="/usr/local/cuda-13.0", version_json=False):
    return kits.install_classic(kits.cuda13("13.0"), host.path(hostpath), "13.0", version_json=version_json)


def fake_nvcc(root, script):
    nvcc = root / "bin/nvcc"
    nvcc.unlink()  # a hardlink into the kits cache: replace it, never write through it
    nvcc.write_text(script)
    nvcc.chmod(0o755)
    return nvcc


def write_config(host, text):
    config = host.work / "config/config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_bytes(text.encode() if isinstance(text, str) else text)
    return config


def one_error_line(proc):
    assert proc.returncode != 0 and proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("cudaswitch: error: "), proc.stderr
    return lines[0]


# ---------------------------------------------------------------- the cache


def foreign_shape(cache):
    """Our format number, another shape: what a different cudaswitch build could leave behind."""
    version, data = marshal.loads(unseal(cache))
    return seal(marshal.dumps((version, {**data, "records": {"13.0": data["records"]},
                                         "watched": sorted(data["watched"])})))


def older_format(cache):
    version, data = marshal.loads(unseal(cache))
    return seal(marshal.dumps((version, {**data, "format": 1})))


def older_release(cache):
    """A cache an earlier cudaswitch wrote, in today's format."""
    return seal(marshal.dumps(("0.0.1", marshal.loads(unseal(cache))[1])))


CORRUPT_CACHES = {
    "random bytes": lambda good: os.urandom(4096),
    "truncated write": lambda good: good[: len(good) // 2],
    "empty file": lambda good: b"",
    "pickle": lambda good: pickle.dumps({"format": 3, "records": []}),
    "json": lambda good: b'{"format": 3, "records": []}',
    "older format": older_format,
    "older release": older_release,
    "bare marshal": lambda good: unseal(good),  # an older cudaswitch's file
    "foreign shape": foreign_shape,
}


@pytest.mark.parametrize("kind", sorted(CORRUPT_CACHES))
def test_corrupt_or_foreign_cache_is_rebuilt(host, kind):
    root, log = logging_toolkit(host, "/usr/local/cuda-13.0")
    good = host.list_json()
    cache = host.work / "cache/registry.marshal"
    cache.write_bytes(CORRUPT_CACHES[kind](cache.read_bytes()))
    proc = host.run("list", "--json")
    assert proc.returncode == 0 and proc.stderr == ""
    assert {item["root"]: item for item in json.loads(proc.stdout)} == good
    before = runs(log)
    assert host.list_json() == good and runs(log) == before  # rebuilt: the next list is served from it
    assert host.run("use", "13.0", "--shell", "json").returncode == 0  # the fast path reads it too


# ---------------------------------------------------------------- config.toml


def test_corrupt_config_names_path_and_line_and_is_left_alone(host):
    classic13(host)
    config = write_config(host, 'default = "13.0"\nsource_order = [\n  "system",\n  oops\n]\n')
    before = (config.read_bytes(), config.stat().st_mtime_ns)
    for args in (["list"], ["list", "--json"], ["which", "13"], ["global", "13.0"], ["global", "--unset"],
                 ["use", "13.0", "--shell", "json"]):
        line = one_error_line(host.run(*args))
        assert str(config) in line and "line 4" in line, (args, line)
    assert (config.read_bytes(), config.stat().st_mtime_ns) == before
    assert host.run("config", "path", check=True).stdout.strip() == str(config)  # still tells where it is


@pytest.mark.parametrize("text, named", [
    ('probe_timeout = "soon"\n', "probe_timeout"),
    ('source_order = ["system", "rpm"]\n', "rpm"),
    (b'default = "\xff"\n', "config.toml"),
])
def test_config_with_wrong_values_is_one_line(host, text, named):
    config = write_config(host, text)
    line = one_error_line(host.run("list"))
    assert str(config) in line and named in line
    assert config.read_bytes() == (text if isinstance(text, bytes) else text.encode())


# ---------------------------------------------------------------- toolkits that are broken


def test_dangling_cuda_link_is_broken_and_the_rest_listed(host):
    """An uninstalled 12.9 whose /usr/local/cuda-12.9 link the installer left behind."""
    classic13(host)
    host.path("/usr/local/cuda-12.9").symlink_to("/usr/local/cuda-12.9.1")
    items = host.list_json()
    dangling = items[str(host.path("/usr/local/cuda-12.9"))]
    assert dangling["status"] == "broken" and "dangling" in " ".join(dangling["problems"])
    assert "/usr/local/cuda-12.9.1" in " ".join(dangling["problems"])
    assert items[str(host.path("/usr/local/cuda-13.0"))]["status"] == "ok"
    assert "not a toolkit request" not in one_error_line(host.run("which", "12.9"))


def test_dangling_system_default_link_lists_the_rest_without_default(host):
    """/usr/local/cuda left pointing at a removed toolkit."""
    classic13(host)
    host.path("/usr/local/cuda").symlink_to("/usr/local/cuda-12.9")
    items = host.list_json()
    assert [i["status"] for i in items.values()] == ["ok"] and not any(i["default"] for i in items.values())
    one_error_line(host.run("which", "system"))


def sleeping(marker):
    """Processes still running `sleep <marker>` (read from /proc: ps may be missing)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as handle:
                if handle.read().split(b"\0")[:2] == [b"sleep", marker.encode()]:
                    found.append(int(pid))
        except OSError:
            pass
    return found


def test_hanging_nvcc_is_broken_within_the_probe_timeout(host):
    """An nvcc stuck on a dead NFS mount or license server; the wrapper's child must not outlive it."""
    classic13(host)
    root = classic13(host, "/usr/local/cuda-13.0-hang")
    marker = "59.%d" % os.getpid()
    log = host.work / "hang.log"
    fake_nvcc(root, "#!/bin/sh\necho run >> %s\nsleep %s\n" % (log, marker))
    write_config(host, "probe_timeout = 1\n")
    try:
        start = time.monotonic()
        items = host.list_json()
        assert time.monotonic() - start < 20
        hung = items[str(root)]
        assert hung["status"] == "broken" and hung["problems"] == ["nvcc did not answer within 1 s"]
        assert items[str(host.path("/usr/local/cuda-13.0"))]["status"] == "ok"
        assert sleeping(marker) == []  # the probe killed the script's whole process group
        assert host.list_json() == items and log.read_text() == "run\n"  # the failure is remembered
    finally:
        for pid in sleeping(marker):
            os.kill(pid, 9)


def test_crashing_nvcc_is_broken_with_the_exit_reason(host):
    """An nvcc that segfaults (a broken libc or a CPU it was not built for): exit status 139."""
    root = classic13(host)
    fake_nvcc(root, "#!/bin/sh\nkill -SEGV $$\n")
    item = host.list_json()[str(root)]
    assert item["status"] == "broken" and len(item["problems"]) == 1
    assert "139" in item["problems"][0] and "SIGSEGV" in item["problems"][0]
    assert "no toolkit matches" in one_error_line(host.run("use", "13.0", "--shell", "json"))


def test_version_json_that_is_not_json_is_a_problem_line(host):
    """A version.json cut short by a full disk during an install."""
    root = classic13(host, version_json=True)
    (root / "version.json").write_text('{\n   "cuda" : {\n      "name" : "CUDA SDK",\n      "vers')
    item = host.list_json()[str(root)]
    assert item["version"] == nvcc_version("13.0")  # nvcc still says what it is
    assert [p for p in item["problems"] if "version.json" in p and "not JSON" in p]
    assert item["status"] != "ok"


def without_file_access_override(cmd):
    """Run `cmd` so that file permissions really apply. Tests run as root, and root reads a mode-000
    dir anyway; the interpreter lives under root's 0700 home, so `nobody` cannot run cudaswitch at
    all. Dropping CAP_DAC_OVERRIDE/CAP_DAC_READ_SEARCH from the bounding set makes root's own
    processes obey permission bits, as any user's do."""
    if os.geteuid() != 0:
        return cmd
    return [kits.require("setpriv"), "--bounding-set=-dac_override,-dac_read_search", *cmd]


def test_unreadable_toolkit_dir_is_broken_and_the_rest_listed(host):
    """Another user's 0700 toolkit in /usr/local (a colleague's private install)."""
    classic13(host)
    private = classic13(host, "/usr/local/cuda-13.1")
    os.chown(private, 65534, 65534)  # nobody's, mode 0700
    private.chmod(0o700)
    try:
        denied = subprocess.run(without_file_access_override(["ls", private]), capture_output=True, timeout=30)
        assert denied.returncode != 0, "permissions do not apply: the test would prove nothing"
        proc = subprocess.run(without_file_access_override([CUDASWITCH, "list", "--json"]), capture_output=True,
                              text=True, env=host.env, timeout=120)
        assert proc.returncode == 0 and proc.stderr == "", proc.stderr
        items = {item["root"]: item for item in json.loads(proc.stdout)}
        assert items[str(private)]["status"] == "broken"
        assert "Permission denied" in items[str(private)]["problems"][0]
        assert items[str(host.path("/usr/local/cuda-13.0"))]["status"] == "ok"
    finally:
        private.chmod(0o755)  # so that pytest can clean tmp_path up
        if os.geteuid() == 0:
            shutil.chown(private, 0, 0)
