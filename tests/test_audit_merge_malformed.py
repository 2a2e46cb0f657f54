"""`audit merge` of 200 malformed reports and 2 good ones: the 2 merge, each of the 200 is refused
in one line naming it, nothing hangs and nothing prints a traceback. The corpus mirrors what a
collection directory holds after a bad night: truncated writes, another tool's JSON, bit rot,
hostile or absurd values (5,000-digit versions, 100,000-deep nesting), FIFOs and devices."""

import json
import os
import random
import subprocess

import pytest

from tests import kits
from tests.conftest import CUDASWITCH, Host

DEEP = 100_000


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    """Two real reports: `audit --json --root` of two small node roots (a runtime-only 12.4)."""
    base = tmp_path_factory.mktemp("good")
    reports = []
    for name in ("good01", "good02"):
        root = base / name
        kits.install_classic_runtime12(root / "usr/local/cuda-12.4")
        (root / "etc").mkdir()
        (root / "etc/hostname").write_text(name + "\n")
        runner = Host(root, base / "work")
        proc = runner.run("audit", "--json", "--root", str(root), check=True)
        reports.append(json.loads(proc.stdout))
    return runner, reports


def _mutations(report):
    """Valid JSON that is not a report merge can read: each a wrong type, absurd value or depth."""
    digits = "1" * 5000
    deep_list = "[" * DEEP + "]" * DEEP
    yield from (json.dumps({**report, key: value}) for key, value in [
        ("host", 5), ("host", ""), ("host", "x" * 10_000), ("host", "node\x1b[31m01"), ("host", None),
        ("toolkits", {}), ("toolkits", [1]), ("toolkits", "none"), ("toolkits", None), ("driver", "575"),
        ("driver", [1]), ("driver", {"release": "12." + digits}), ("driver", {"release": 575}),
        ("gpus", 2), ("gpus", ["H100"]), ("gpus", [{"name": 1}]), ("gpus", [{"capability": 9.0}]),
        ("gpus", [{"capability": digits + ".0"}]), ("root", 1), ("root", ["/"]), ("kind", "cudaswitch-verify"),
        ("kind", ["x"]), ("format", 99), ("format", "1"), ("format", 1.0), ("format", True), ("format", [1]),
    ])
    toolkit = report["toolkits"][0]
    for key, value in [("version", "12." + digits), ("version", digits), ("version", "banana"), ("version", 12.4),
                       ("version", "¹²"), ("status", "fine"), ("status", None), ("root", 7), ("root", "/" * 10_000),
                       ("components", []), ("components", {"nccl": "2." + digits}), ("components", {"cudnn": 9})]:
        yield json.dumps({**report, "toolkits": [{**toolkit, key: value}]})
    yield json.dumps({**report, "toolkits": [toolkit, 5]})
    yield json.dumps({**report, "toolkits": [[[[toolkit]]]]})
    yield json.dumps({**report, "format": None})
    text = json.dumps(report)
    yield text.replace('"format": 1', '"format": ' + digits)  # an integer json cannot convert
    yield text.replace('"format": 1', '"format": NaN')
    yield text.replace('"format": 1', '"format": Infinity')
    yield text[:-1] + ', "extra": %s}' % deep_list
    yield deep_list
    yield '{"a":' * DEEP + "1" + "}" * DEEP
    yield json.dumps([report])
    yield json.dumps("a string")
    yield "null"
    yield "12"


def _garbage(report, rng):
    """Not JSON at all: truncations at random points, bit flips, binary, TOML, empty."""
    text = json.dumps(report, indent=2)
    for _ in range(100):
        yield text[:rng.randrange(1, len(text) - 1)]
    for _ in range(60):
        data = bytearray(text.encode())
        for _ in range(rng.randrange(1, 6)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        try:
            decoded = json.loads(data.decode("utf-8", "replace"))
            if isinstance(decoded, dict) and decoded.get("host") == report["host"]:
                continue  # a flip inside a string value can leave a valid report: not malformed
        except ValueError:
            pass
        yield bytes(data)
    yield b""
    yield b"   \n\n  "
    yield b"\x00" * 4096
    yield bytes(rng.randrange(256) for _ in range(8192))
    yield b"\xff\xfe" + text.encode("utf-16-le")
    yield "[a]\n" + "".join("[%s]\n" % ".".join(["x"] * n) for n in range(1, 50)) + "v = " + "[" * 2000 + "]" * 2000
    yield "Connection refused\n"
    yield "node04: ssh: connect to host node04 port 22: No route to host\n"


def build_corpus(directory, report, count=200):
    """`count` malformed inputs as files (plus a FIFO, a directory and a device link)."""
    rng = random.Random(20261201)
    items = list(_mutations(report)) + list(_garbage(report, rng))
    paths = [directory / "fifo.json", directory / "dir.json", directory / "zero.json", directory / "huge.json"]
    os.mkfifo(paths[0])  # a FIFO nobody writes: reading it would hang
    paths[1].mkdir()
    paths[2].symlink_to("/dev/zero")  # an endless device
    with open(paths[3], "wb") as handle:  # over the size cap
        handle.write(b'{"host": "' + b"x" * (17 << 20) + b'"}')
    for index, item in enumerate(items[:count - len(paths)]):
        path = directory / ("bad%03d.json" % index)
        path.write_bytes(item if isinstance(item, bytes) else item.encode())
        paths.append(path)
    assert len(paths) == count, len(paths)
    return paths


def merge(env, *args, stdin=None):
    return subprocess.run([CUDASWITCH, "audit", "merge", *map(str, args)], capture_output=True, timeout=300,
                          env=env, input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL)


@pytest.mark.parametrize("as_json", [True, False], ids=["json", "table"])
def test_200_malformed_files_and_2_good_ones(good, tmp_path, as_json):
    runner, reports = good
    files = []
    for report in reports:
        files.append(tmp_path / ("%s.json" % report["host"]))
        files[-1].write_text(json.dumps(report, indent=2))
    corpus = build_corpus(tmp_path, reports[0])
    args = [files[0], *corpus, files[1]] + (["--json"] if as_json else [])
    proc = merge(runner.env, *args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    stderr = proc.stderr.decode()
    assert "Traceback" not in stderr and "Error:" not in stderr
    lines = stderr.splitlines()
    unnamed = [p for p in corpus if not any(line.startswith("cudaswitch: error: %s: " % p) for line in lines)]
    assert unnamed == [] and len(lines) == 200, [p.read_bytes()[:300] if p.is_file() else p for p in unnamed]
    for path, line in zip(corpus, lines):
        assert line.startswith("cudaswitch: error: %s: " % path) and len(line) < 400, line[:500]
    if as_json:
        merged = json.loads(proc.stdout)
        assert [h["host"] for h in merged["hosts"]] == ["good01", "good02"]
        assert [e["file"] for e in merged["errors"]] == [str(p) for p in corpus]
        assert merged["skew"]["refused"] == [str(p) for p in corpus]
    else:
        assert "2 hosts merged, 200 reports refused" in proc.stdout.decode()


def test_200_malformed_lines_on_stdin_and_2_good_ones(good):
    """The same as pdsh delivers it: one report per line, `node: ` prefixes, 200 bad lines."""
    runner, reports = good
    rng = random.Random(7)
    bad = [item for item in _mutations(reports[0]) if "\n" not in item]
    text = json.dumps(reports[0])
    bad += [text[:rng.randrange(1, len(text) - 1)] for _ in range(200 - len(bad))]
    lines = ["good01: " + json.dumps(reports[0])] + ["bad%03d: %s" % (n, b) for n, b in enumerate(bad)]
    lines.append(json.dumps(reports[1]))
    proc = merge(runner.env, "--json", stdin=("\n".join(lines) + "\n").encode())
    assert proc.returncode == 0, proc.stderr[-3000:]
    errors = proc.stderr.decode().splitlines()
    assert len(errors) == 200 and "Traceback" not in proc.stderr.decode()
    for number, line in enumerate(errors):
        assert line.startswith("cudaswitch: error: <stdin> line %d (bad%03d): " % (number + 2, number)), line[:300]
    assert [h["host"] for h in json.loads(proc.stdout)["hosts"]] == ["good01", "good02"]


def test_only_malformed_is_one_error_and_exit_1(good, tmp_path):
    runner, reports = good
    corpus = build_corpus(tmp_path, reports[0], count=20)
    proc = merge(runner.env, *corpus)
    assert proc.returncode == 1 and proc.stdout == b""
    assert proc.stderr.decode().splitlines()[-1].startswith("cudaswitch: error: no audit report could be read")
