"""`audit merge` at fleet scale: a directory of reports (what `srun --output=audit/%N.json` leaves)
merged by naming the directory, and the streaming merge's JSON unchanged.

The JSON is pinned by digest: FLEET_DIGESTS are the sha256 of what the merge before streaming
(it kept every node's summary and cell) printed for fleet_lines() and fleet_files(), run once from
a worktree of that commit. A changed byte anywhere in the 4 MB of JSON fails the test; the
spot checks beside it are computed independently, from the generated reports, to say where."""

import hashlib
import json
import os
import random
import re
import subprocess

import pytest

from tests import kits
from tests.conftest import CUDASWITCH, Host

ARGS = ["--json", "--nodes", "gpu[00001-10010]", "--require", "cuda=12.4", "--same", "driver"]
FLEET_DIGESTS = {"lines": "f51e90522a8be1ce8b0eb661cf8b0f0ca8139b5ec3d0c2614ddfa6df3c974808",
                 "files": "6055e8b6aa4a60654f63802c2d1f4acd0d8a2daaf1071ef30121a0fb6080d489"}
GPUS = [("NVIDIA H100 80GB HBM3", "9.0"), ("NVIDIA A100-SXM4-80GB", "8.0"), ("Tesla V100-SXM2-32GB", "7.0")]
DRIVERS = [{"release": "580.95.05", "cuda": "13.0"}, {"release": "570.195.03", "cuda": "12.8"},
           {"release": None, "cuda": "12.9"}, None]
KIT_SHAPE = {"version": "13.0.88", "status": "ok", "driver_supported": None, "components": None}
KITS = [("13.0.88", "ok", "2.27.3"), ("12.8.93", "ok", "2.26.2"), ("12.4.131", "incomplete", "2.21.5"),
        ("11.8.89", "ok", None)]


def _toolkit(rng, version, status, nccl, driver):
    root = "/usr/local/cuda-" + version.rsplit(".", 1)[0]
    status = "broken" if rng.random() < 0.002 else status
    supported = None if driver is None else not (version.startswith("13.") and driver["cuda"] != "13.0")
    return {"version": version, "status": status, "root": root, "driver_supported": supported,
            "components": {"cudart": version, "nccl": nccl if rng.random() > 0.01 else None,
                           "cudnn": "9.1.0" if rng.random() < 0.3 else None},
            "size_bytes": rng.randrange(1 << 32), "problems": []}


def fleet_report(rng, number):
    """One node: mostly alike, some drift (driver, GPUs, a toolkit missing, broken or doubled, a
    dangling link, a duplicate host name), as a real fleet's reports differ."""
    driver = rng.choices(DRIVERS, weights=[90, 8, 1, 1])[0]
    kits = [_toolkit(rng, *kit, driver) for kit in KITS if rng.random() < (0.97 if kit[0] != "11.8.89" else 0.05)]
    if rng.random() < 0.01:
        kits.append(dict(kits[0], root="/opt/cuda-copy") if kits else _toolkit(rng, *KITS[0], driver))
    if rng.random() < 0.005:
        kits.append({"version": None, "status": "broken", "root": "/usr/local/cuda-12.9", "components": None})
    model, capability = rng.choices(GPUS, weights=[60, 38, 2])[0]
    gpus = [{"index": i, "name": model, "capability": capability} for i in range(8)]
    if rng.random() < 0.01:
        gpus = [{"model": "NVIDIA L40S", "bus": "0000:%02x:00.0" % i} for i in range(4)]
    host = "gpu%05d" % (number - 1 if number % 2503 == 0 else number)
    report = {"kind": "cudaswitch-audit", "format": 1, "host": host, "root": "/", "driver": driver, "gpus": gpus,
              "toolkits": kits, "checks": []}
    if number % 50 == 0:  # audited with --root under a per-node image: every path differs
        report["root"] = "/srv/images/gpu%05d" % number
        for kit in kits:
            kit["root"] = report["root"] + kit["root"]
    return _odd(report, number)


def _odd(report, number):
    """A few values equal to common ones in Python (0 == False, 1.0 == 1 == True) that read
    differently, and one unhashable: a merge that shares work between alike reports must not
    take these for the common ones."""
    for kit in report["toolkits"][:1]:
        if number % 301 == 0 and kit["driver_supported"] is False:
            kit["driver_supported"] = 0  # valid, and not "unsupported"
        elif number % 503 == 0 and kit["driver_supported"] is True:
            kit["driver_supported"] = 1
    if number % 4001 == 0:
        report["format"] = 1.0  # refused
    elif number % 4003 == 0:
        report["gpus"][0]["name"] = [report["gpus"][0].get("name")]  # refused
    elif number % 4007 == 0:
        report["toolkits"] = [dict(KIT_SHAPE, root="/x" * 2100)]  # refused: longer than a path
    elif number % 4013 == 0:
        report["root"] = 7  # refused
    return report


def fleet_documents(count=10_000, seed=20261204):
    """[(number, JSON text)]: 10,000 reports, every 1999th cut short (a node that died mid-write)."""
    rng = random.Random(seed)
    out = []
    for number in range(1, count + 1):
        text = json.dumps(fleet_report(rng, number), separators=(",", ":"))
        out.append((number, text[:150] if number % 1999 == 0 else text))
    return out


def fleet_lines():
    """JSON lines as pdsh prints them, every 7th with its `node: ` prefix."""
    return "".join(("gpu%05d: " % n if n % 7 == 0 else "") + text + "\n" for n, text in fleet_documents()).encode()


def fleet_files(directory):
    """One file per node, as srun --output=DIR/%N.json leaves them; their names in name order."""
    directory.mkdir()
    names = []
    for number, text in fleet_documents():
        names.append("gpu%05d.json" % number)
        (directory / names[-1]).write_text(text + "\n")
    return names


def merge(cwd, *args, stdin=None):
    return subprocess.run([CUDASWITCH, "audit", "merge", *map(str, args)], input=stdin, capture_output=True,
                          timeout=300, cwd=cwd, env=Host(cwd, cwd / "work").env,
                          stdin=None if stdin is not None else subprocess.DEVNULL)


def refused(number):
    """Cut short, format 1.0, a GPU name that is an array, a root too long or not a path."""
    return any(number % every == 0 for every in (1999, 4001, 4003, 4007, 4013))


REFUSED = sum(map(refused, range(1, 10_001)))


def _spot_checks(merged):
    """Independent of both merges: the hosts merged, refused and renamed, from the reports."""
    good = [(n, json.loads(t)) for n, t in fleet_documents() if not refused(n)]
    assert len(merged["hosts"]) == len(good) and len(merged["errors"]) == REFUSED
    unsupported = {r["host"] for _, r in good if any(k.get("driver_supported") is False for k in r["toolkits"])}
    assert {h.split(" (")[0] for e in merged["skew"]["driver_cannot_run"] for h in e["nodes"]} == unsupported
    assert [(h["driver"], h["gpus"], h["toolkits"]) for h in merged["hosts"]] == [
        ((r["driver"] or {}).get("release"), len(r["gpus"]), len(r["toolkits"])) for _, r in good]
    assert sum(len(t["nodes"]) for t in merged["node_types"]) == len(good)
    assert sum(" (" in h["host"] for h in merged["hosts"]) == sum(1 for n, _ in good if n % 2503 == 0)


def peak_mib(tmp_path, *args, stdin=None):
    """(process, peak RSS in MiB) of `cudaswitch ARGS`, measured by GNU time: a child forked from
    this test process would count the test's own pages."""
    out = tmp_path / "time.txt"
    proc = subprocess.run([kits.require("time"), "-f", "%M", "-o", str(out), CUDASWITCH, *map(str, args)],
                          input=stdin, capture_output=True, timeout=300, cwd=tmp_path,
                          env=Host(tmp_path, tmp_path / "work").env)
    return proc, int(out.read_text().split()[-1]) / 1024


def test_json_lines_merge_as_before_in_the_memory_of_a_few(tmp_path):
    """The same bytes as before, and streaming: 10,000 reports cost a few MiB over starting up
    (before, every node's cells and summary stayed: 44 MiB over)."""
    proc, peak = peak_mib(tmp_path, "audit", "merge", *ARGS, stdin=fleet_lines())
    assert proc.returncode == 0 and proc.stderr.count(b"\n") == REFUSED, proc.stderr[-2000:]
    _spot_checks(json.loads(proc.stdout))
    assert hashlib.sha256(proc.stdout).hexdigest() == FLEET_DIGESTS["lines"]
    _, floor = peak_mib(tmp_path, "audit", "merge", "--help")
    assert peak <= floor + 16, (peak, floor)


def test_a_directory_merges_as_its_files_did(tmp_path):
    """`audit merge reports` gives, byte for byte, what `audit merge reports/*.json` gave."""
    fleet_files(tmp_path / "reports")
    proc = merge(tmp_path, "reports", *ARGS)
    assert proc.returncode == 0 and proc.stderr.count(b"\n") == REFUSED, proc.stderr[-2000:]
    _spot_checks(json.loads(proc.stdout))
    assert hashlib.sha256(proc.stdout).hexdigest() == FLEET_DIGESTS["files"]


@pytest.fixture
def audit_dir(tmp_path):
    """A Slurm output directory as an admin finds it: two reports, a subdirectory (with a report
    of its own, not merged), notes, a FIFO and a cut-short report among the *.json, and a link
    to a report outside the directory."""
    reports = [fleet_report(random.Random(n), n) for n in (1, 2, 3, 4)]
    audit = tmp_path / "audit"
    (audit / "old").mkdir(parents=True)
    for name, report in zip(("node01", "node02"), reports):
        (audit / (name + ".json")).write_text(json.dumps(dict(report, host=name)))
    (audit / "old/node03.json").write_text(json.dumps(dict(reports[2], host="node03")))
    (tmp_path / "elsewhere.json").write_text(json.dumps(dict(reports[3], host="stranger")))
    (audit / "notes.txt").write_text("reran node02\n")
    (audit / ".node05.json.swp").write_text("editor swap file")
    os.mkfifo(audit / "node06.json")
    (audit / "node07.json").write_text(json.dumps(dict(reports[0], host="node07"))[:100])
    os.symlink("../elsewhere.json", audit / "node08.json")
    return tmp_path


def test_directory_of_reports(audit_dir):
    proc = merge(audit_dir, "audit/", "--json")
    assert proc.returncode == 0, proc.stderr
    merged = json.loads(proc.stdout)
    assert [(h["host"], h["file"]) for h in merged["hosts"]] == [("node01", "audit/node01.json"),
                                                                  ("node02", "audit/node02.json")]
    assert [(e["file"], e["error"].split(" (")[0]) for e in merged["errors"]] == [
        ("audit/node06.json", "not a regular file"), ("audit/node07.json", "not JSON"),
        ("audit/node08.json", "a link out of audit/, not followed")]
    lines = proc.stderr.decode().splitlines()
    assert lines[:3] == ["cudaswitch: error: %s: %s" % (e["file"], e["error"]) for e in merged["errors"]]
    assert lines[3:] == ["cudaswitch: audit/: skipped 2 entries (not *.json files): notes.txt, old/"]
    strict = merge(audit_dir, "audit", "--strict")
    assert strict.returncode == 1 and b"3 reports refused: audit/node06.json" in strict.stderr


def test_directory_without_reports_is_one_line_and_exit_1(tmp_path):
    (tmp_path / "empty").mkdir()
    proc = merge(tmp_path, "empty")
    assert proc.returncode == 1 and proc.stdout == b""
    assert proc.stderr.decode().splitlines()[0] == "cudaswitch: error: empty: a directory without *.json files"
    assert b"Traceback" not in proc.stderr


GROUP = re.compile(r'<th class="group( hidden)?" data-type="([^"]*)" data-nodes="[^"]*">.*?'
                   r'<small class="count">([^<]*)</small><small class="matches">([^<]*)</small></th>')


def test_html_page_groups_the_fleet_in_chromium(tmp_path):
    """10,000 nodes in 193 node types: one column per type, every one shown with its node count and
    share; a filter by node name (from a link) keeps the types holding such nodes and says how
    many of each type's nodes match. Counts are checked against the JSON's node types."""
    from tests import browser_support as browser

    page = tmp_path / "fleet.html"
    proc = merge(tmp_path, "--json", "--html", page, stdin=fleet_lines())
    assert proc.returncode == 0, proc.stderr[-2000:]
    types = {t["name"]: t["nodes"] for t in json.loads(proc.stdout)["node_types"]}
    total = sum(map(len, types.values()))
    dom, console = browser.load(page.as_uri(), tmp_path / "profile")
    assert console == [] and 'data-ready="1"' in dom
    groups = GROUP.findall(dom)
    assert [name for _, name, _, _ in groups] == list(types) and len(types) > 100
    for hidden, name, count, matches in groups:
        share = 100.0 * len(types[name]) / total
        assert not hidden and matches == "" and count == "{:,} node{}, {:.1f}%".format(
            len(types[name]), "" if len(types[name]) == 1 else "s", share)
    assert "<h1>CUDA audit of {:,} nodes: {} node types</h1>".format(total, len(types)) in dom

    filtered, console = browser.load(page.as_uri() + "#filter=gpu0001", tmp_path / "profile")
    assert console == []
    holding = {name: sum("gpu0001" in node for node in nodes) for name, nodes in types.items()}
    shown = {name: matches for hidden, name, _, matches in GROUP.findall(filtered) if not hidden}
    assert shown == {name: "%d of %s %s" % (count, "{:,}".format(len(types[name])),
                                            "node matches" if len(types[name]) == 1 else "nodes match")
                     for name, count in holding.items() if count}
