"""The one cache is private: under a loose umask, in a dir another user made first, or with a
file someone else may write, no cached answer from another user is ever used.

Each case runs the real command. The other user is `nobody` (CI runs as root, which may hand a
dir or file to it with chown); the cases mirror a cluster login node where a shared group and
umask 002 are the rule, and an XDG_CACHE_HOME on a shared sticky scratch dir."""

import marshal
import os
import stat
import subprocess

import pytest

from cudaswitch.safeio import seal, unseal

from tests import kits
from tests.conftest import CUDASWITCH

NOBODY = 65534


def other_user_available():
    if os.geteuid() == 0:
        return True
    if os.environ.get("CI") == "true":
        pytest.fail("CI runs as root: a second user's files are made with chown")
    pytest.skip("needs root to give a file to another user")


def run(host, *args, umask=None, env=None):
    """The real command, under `umask` when given (as a login shell with that umask starts it)."""
    return subprocess.run([CUDASWITCH, *args], capture_output=True, text=True, timeout=120,
                          env={**host.env, **(env or {})}, stdin=subprocess.DEVNULL,
                          preexec_fn=(lambda: os.umask(umask)) if umask is not None else None)


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def kit_host(host):
    kits.install_classic(kits.cuda13("13.0"), host.path("/usr/local/cuda-13.0"), "13.0")
    return host


def test_umask_000_still_makes_a_private_cache(kit_host):
    """umask 000 made the cache dir 0777 and registry.marshal 0666: anyone could rewrite it."""
    proc = run(kit_host, "list", umask=0)
    assert proc.returncode == 0, proc.stderr
    cache = kit_host.work / "cache"
    assert mode(cache) == 0o700
    files = [p for p in cache.iterdir() if p.is_file()]
    assert files and all(mode(p) == 0o600 for p in files), [(p.name, oct(mode(p))) for p in files]


def poisoned_registry(host):
    """The real registry cache with the toolkit's version changed: what another user who could
    write the file would leave (a version, a root, an nvcc of their choosing)."""
    path = host.work / "cache" / "registry.marshal"
    payload = marshal.loads(unseal(path.read_bytes()))
    data = payload[1] if isinstance(payload, tuple) else payload  # (cudaswitch's version, the registry)
    for record in data["records"]:
        record["version"] = "99.9.0"
    data["list_json"] = [f.replace('"13.0.', '"99.9.') for f in data["list_json"]]
    return path, seal(marshal.dumps(payload))


@pytest.mark.parametrize("owner, bits", [("nobody", 0o600), ("me", 0o666), ("me", 0o620)])
def test_a_cache_file_others_may_write_is_not_read(kit_host, owner, bits):
    other_user_available()
    assert run(kit_host, "list").returncode == 0
    path, poisoned = poisoned_registry(kit_host)
    path.write_bytes(poisoned)
    os.chmod(path, bits)
    if owner == "nobody":
        os.chown(path, NOBODY, NOBODY)
    proc = run(kit_host, "list", "--json")
    assert proc.returncode == 0 and "99.9" not in proc.stdout and '"13.0.' in proc.stdout, proc.stdout
    assert run(kit_host, "which", "99.9").returncode != 0


def test_a_cache_dir_of_another_user_is_not_used(kit_host, tmp_path):
    """XDG_CACHE_HOME on a shared sticky dir where another user made `cudaswitch/` first, with a
    poisoned registry in it: one warning, a private dir instead, and the real toolkit listed."""
    other_user_available()
    assert run(kit_host, "list").returncode == 0
    path, poisoned = poisoned_registry(kit_host)
    shared = tmp_path / "scratch"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    theirs = shared / "cudaswitch"
    theirs.mkdir()
    (theirs / "registry.marshal").write_bytes(poisoned)
    os.chown(theirs / "registry.marshal", NOBODY, NOBODY)
    os.chown(theirs, NOBODY, NOBODY)
    env = {"CUDASWITCH_CACHE_DIR": "", "XDG_CACHE_HOME": str(shared), "TMPDIR": str(tmp_path)}
    proc = run(kit_host, "list", "--json", env=env)
    assert proc.returncode == 0 and "99.9" not in proc.stdout and '"13.0.' in proc.stdout
    warnings = [line for line in proc.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1 and str(theirs) in warnings[0] and "another user" in warnings[0], proc.stderr
    fallback = tmp_path / ("cudaswitch-cache-%d" % os.geteuid())
    assert mode(fallback) == 0o700 and (fallback / "registry.marshal").exists()
    assert sorted(p.name for p in theirs.iterdir()) == ["registry.marshal"]  # theirs is left alone


def test_a_cache_dir_of_ours_that_others_may_write_is_made_private_and_emptied(kit_host):
    """A cache dir an older cudaswitch made under umask 002 on a shared group: what is in it may
    be anyone's; it is made 0700 and emptied, and the answers are computed again."""
    assert run(kit_host, "list").returncode == 0
    path, poisoned = poisoned_registry(kit_host)
    path.write_bytes(poisoned)
    os.chmod(kit_host.work / "cache", 0o775)
    proc = run(kit_host, "list", "--json")
    assert proc.returncode == 0 and "99.9" not in proc.stdout and '"13.0.' in proc.stdout
    assert "made private and emptied" in proc.stderr and mode(kit_host.work / "cache") == 0o700
    again = run(kit_host, "list", "--json")
    assert again.stderr == "" and again.stdout == proc.stdout


def test_the_launcher_is_private_under_a_loose_umask(host, tmp_path):
    """umask 000 left the launchers' dirs 0777: another user could swap the program the hook runs
    on the next `cd`. Every dir cudaswitch makes on the way is 0700, and so is the launcher."""
    data = tmp_path / "data"
    proc = run(host, "init", "bash", umask=0, env={"CUDASWITCH_DATA_DIR": str(data)})
    assert proc.returncode == 0, proc.stderr
    launchers = list((data / "launchers").glob("*/cudaswitch"))
    if not launchers:  # the script's own #! line kept -E: nothing to write
        assert '-E' in open(CUDASWITCH, "rb").readline().decode()
        return
    (launcher,) = launchers
    assert str(launcher) in proc.stdout
    for directory in (data, data / "launchers", launcher.parent):
        assert mode(directory) == 0o700, directory
    assert mode(launcher) == 0o700


def test_a_launcher_dir_others_may_change_is_not_named(host, tmp_path):
    """A data dir inside a dir another user owns: no launcher there is trusted; the hook names
    the script itself instead."""
    other_user_available()
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chmod(theirs, 0o777)
    os.chown(theirs, NOBODY, NOBODY)
    proc = run(host, "init", "bash", env={"CUDASWITCH_DATA_DIR": str(theirs / "data")})
    assert proc.returncode == 0, proc.stderr
    assert str(theirs) not in proc.stdout


def test_managed_toolkits_in_a_dir_others_may_write_are_not_used(kit_host, tmp_path):
    """A toolkit another user put in a shared-writable managed dir must not become `use`'s."""
    managed = kit_host.work / "data" / "toolkits"
    managed.mkdir(parents=True)
    os.symlink(kit_host.path("/usr/local/cuda-13.0"), managed / "13.0")
    os.chmod(managed, 0o777)
    proc = run(kit_host, "list", "--json")
    assert proc.returncode == 0 and '"managed"' not in proc.stdout
    assert "managed toolkits dir" in proc.stderr and "writable by other users" in proc.stderr
    os.chmod(managed, 0o700)
    assert '"managed"' in run(kit_host, "list", "--json", env={}).stdout


def test_a_toolkit_rewritten_in_place_with_its_mtimes_kept_is_seen(host):
    """`rsync -a` or `cp -p` of a newer release over an old one keeps every mtime (and the dir's):
    list and use must show the new version, not the cached one. A hand-made toolkit whose nvcc
    reports its release as the real one does."""
    root = host.path("/usr/local/cuda-12.8")
    (root / "bin").mkdir(parents=True)
    (root / "lib64").mkdir()
    nvcc, version = root / "bin/nvcc", root / "version.json"

    def release(patch):
        nvcc.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 12.8, V12.8.%d'\n" % patch)
        nvcc.chmod(0o755)
        version.write_text('{"cuda": {"name": "CUDA SDK", "version": "12.8.%d"}}' % patch)

    release(61)
    stamps = {p: os.stat(p).st_mtime_ns for p in (nvcc, version, root, root / "bin")}
    first = host.list_json()[str(root)]
    assert first["version"] == "12.8.61"
    release(93)  # in place: same inodes, same sizes
    for path, ns in stamps.items():
        os.utime(path, ns=(ns, ns))
    assert host.list_json()[str(root)]["version"] == "12.8.93"
    use = run(host, "use", "12.8.93", "--shell", "json", "--no-verify")
    assert use.returncode == 0 and str(root) in use.stdout, use.stderr
