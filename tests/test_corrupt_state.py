"""What a crash, a full disk, a bit flip, a sync tool or a prank leaves where cudaswitch keeps its
config and caches, × the commands people run (`list`, `use`, `hook-env`, `global`): never a
traceback or a hang; a broken cache is rebuilt (the command works and the cache is good again); a
broken config is one line naming the file and the key; a read-only or full filesystem under
`global` is one line and the old config stays as it was."""

import marshal
import os
import random
import shutil
import subprocess

import pytest

from tests import kits

COMMANDS = (("list", "--json"), ("use", "13.0", "--shell", "bash"), ("hook-env", "--shell", "bash"),
            ("global", "13.1"))
GOOD_CONFIG = 'default = "13.0"\nsource_order = ["system", "module"]\nprobe_timeout = 5.0\ntorch_timeout = 10\n'
# config values a hand edit, another tool or an old cudaswitch can leave; each names its key
BAD_VALUES = {
    "probe_timeout": ("nan", "inf", "-inf", "1e308", "0", "-1", '"5"', "true", "[5]"),
    "torch_timeout": ("nan", "1e308", "-3", '"fast"'),
    "toolkits": ("[1, 2]", '"/opt/cuda"', "[[1]]", '[""]', "{a = 1}"),
    "search_roots": ("[[1]]", "[true]", "1"),
    "source_order": ('["nowhere"]', "[1]", '"system"'),
    "default": ('"¹³"', '"/usr/local/cuda"', '"$(touch x)"', "13", '""', '"١٣"'),
    "python": ("1", '""', "[]"),
    "probe_exec": ('"yes"', "1"),
}
DEVICES = ("/dev/zero", "/dev/urandom", "/dev/null")


def config_cases(rng):
    cases = [("value %s = %s" % (k, v), "%s = %s\n" % (k, v), k) for k, vs in BAD_VALUES.items() for v in vs]
    cases.append(("deep nesting", "x = " + "[" * 1000 + "]" * 1000 + "\n", None))
    cases.append(("deep inline tables", "x = " + "{a = " * 500 + "1" + "}" * 500 + "\n", None))
    cases.append(("not utf-8", b"default = \"\xff\xfe\"\n", None))
    cases.append(("huge", "# pad\n" * 400000, None))
    cases.append(("not toml", "default = \n[[[\n", None))
    for n in range(30):  # truncations and bit flips of a good file
        data = bytearray(GOOD_CONFIG.encode())
        if n % 2:
            data = data[:rng.randrange(len(data))]
        else:
            for _ in range(rng.randrange(1, 4)):
                data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        cases.append(("mangled %d" % n, bytes(data), "maybe"))
    return cases


def special_cases():
    return ["fifo", "directory", "loop", "dangling"] + list(DEVICES)


def make_special(path, kind):
    if os.path.lexists(path):
        shutil.rmtree(path) if os.path.isdir(path) and not os.path.islink(path) else os.unlink(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "loop":
        os.symlink(str(path), path)
    elif kind == "dangling":
        os.symlink(str(path) + ".gone", path)
    else:
        os.symlink(kind, path)


def run(host, args, work, cwd, timeout=60):
    env = {"CUDASWITCH_CONFIG_DIR": str(work / "config"), "CUDASWITCH_CACHE_DIR": str(work / "cache")}
    try:
        return host.run(*args, env=env, cwd=cwd, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise AssertionError("cudaswitch %s hung" % " ".join(args)) from None


def assert_clean(proc, args, label):
    assert "Traceback" not in proc.stderr, (label, args, proc.stderr[-800:])
    assert proc.returncode in (0, 1, 2), (label, args, proc.returncode)
    # a mangled key name is a key cudaswitch does not know: one warning line of its own, beside the one line
    lines = [line for line in proc.stderr.splitlines() if not line.startswith("cudaswitch: warning: ")
             or "unknown key" not in line]
    assert len(lines) <= 1, (label, args, proc.stderr)
    if proc.returncode != 0:
        assert proc.stdout == "", (label, args)


@pytest.fixture
def project(tmp_path):
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / ".cudaversion").write_text("13.0\n")
    return tmp_path / "proj"


def test_every_broken_config_is_one_line_naming_the_key(standard_host, tmp_path, project):
    rng = random.Random(3)
    cases = config_cases(rng) + [(kind, None, None) for kind in special_cases()]
    for index, (label, content, key) in enumerate(cases):
        work = tmp_path / ("w%d" % index)
        config = work / "config" / "config.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        if content is None:
            make_special(config, label)
        else:
            config.write_bytes(content if isinstance(content, bytes) else content.encode())
        before = os.readlink(config) if config.is_symlink() else (config.read_bytes() if config.is_file() else None)
        for args in COMMANDS:
            proc = run(standard_host, args, work, project)
            assert_clean(proc, args, label)
            if key not in (None, "maybe") and args[0] in ("list", "global"):
                assert proc.returncode == 1 and "config.toml" in proc.stderr and key in proc.stderr, (
                    label, proc.stderr)
            if proc.returncode != 0 and args[0] == "global":  # a refused write leaves the file as it was
                now = (os.readlink(config) if config.is_symlink()
                       else (config.read_bytes() if config.is_file() else None))
                assert now == before, label
        shutil.rmtree(work, ignore_errors=True)


def cache_mangles(good, rng):
    yield "empty", b""
    yield "foreign marshal", marshal.dumps({"format": 4, "records": [{"version": 1}], "watched": {}})
    yield "wrong types", marshal.dumps({"format": 4, "key": (), "watched": {0: "x"}, "records": []})
    yield "deep", b"[" * 200000
    for n in range(20):
        data = bytearray(good)
        if n % 2:
            data = data[:rng.randrange(1, len(data))]
        else:
            for _ in range(rng.randrange(1, 6)):
                data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        yield "mangled %d" % n, bytes(data)


@pytest.mark.parametrize("cache_name", ["registry.marshal", "verdicts.marshal"])
def test_every_broken_cache_is_rebuilt(standard_host, tmp_path, project, cache_name):
    work = tmp_path / "work"
    clean = [run(standard_host, args, work, project) for args in COMMANDS[:3]]
    for proc in clean:
        assert proc.returncode == 0, proc.stderr
    good = (work / "cache" / cache_name).read_bytes()
    rng = random.Random(cache_name)
    cases = list(cache_mangles(good, rng)) + [(kind, None) for kind in special_cases()]
    for label, content in cases:
        path = work / "cache" / cache_name
        if content is None:
            make_special(path, label)
        else:
            make_special(path, "fifo")  # replaced below: clears a directory left by an earlier case
            os.unlink(path)
            path.write_bytes(content)
        for args, want in zip(COMMANDS[:3], clean):
            proc = run(standard_host, args, work, project)
            assert_clean(proc, args, label)
            assert proc.returncode == 0, (label, args, proc.stderr)
            if args[0] == "list":  # rebuilt: the same toolkits as with a good cache
                assert proc.stdout == want.stdout, label
        if label != "directory":  # rebuilt in place (a directory there cannot be replaced by a file)
            assert path.is_file() and not path.is_symlink(), label


def mount(kind, where, size="64k"):
    kits.require("mount")
    if os.geteuid() != 0:
        kits._give_up("mounting a test filesystem needs root")
    opts = "size=%s" % size + (",ro" if kind == "ro" else "")
    subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(where)], check=True, timeout=30)


@pytest.mark.parametrize("kind", ["ro", "full"])
def test_global_on_a_read_only_or_full_filesystem_is_one_line(standard_host, tmp_path, project, kind):
    work = tmp_path / "work"
    config_dir = work / "config"
    config_dir.mkdir(parents=True)
    mount("rw", config_dir)
    try:
        (config_dir / "config.toml").write_text('default = "13.0"\n')
        if kind == "ro":
            subprocess.run(["mount", "-o", "remount,ro", str(config_dir)], check=True, timeout=30)
        else:
            fd = os.open(config_dir / "filler", os.O_WRONLY | os.O_CREAT)  # fill it up
            try:
                while os.write(fd, b"\0" * 4096):
                    pass
            except OSError:
                pass
            finally:
                os.close(fd)
        proc = run(standard_host, ("global", "13.1"), work, project)
        assert proc.returncode == 1 and proc.stdout == "" and "Traceback" not in proc.stderr, proc.stderr
        assert proc.stderr.count("\n") == 1 and "config.toml" in proc.stderr, proc.stderr
        assert ("Read-only" in proc.stderr) if kind == "ro" else ("No space" in proc.stderr), proc.stderr
        assert (config_dir / "config.toml").read_text() == 'default = "13.0"\n'
        assert [p.name for p in config_dir.iterdir() if p.name.endswith(".tmp")] == []
    finally:
        subprocess.run(["umount", str(config_dir)], timeout=30)
