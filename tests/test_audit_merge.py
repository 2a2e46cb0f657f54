"""`cudaswitch audit merge`: three nodes' real reports (different roots) -> one versions x hosts
matrix, as a table and as JSON; a malformed report is named in one line and the rest still merge."""

import json
import re
import subprocess

import pytest

from tests import kits
from tests.conftest import CUDASWITCH, Host
from tests.audit_support import build_image, set_version_json, wheel_versions, write_driver

DRIVER_590 = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  590.44.01  Release Build\n"


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """node01: acceptance 1's image. node02: 13.1, and a 13.0 dir whose bin/ is 13.1's (broken).
    node03: only a runtime-only 12.4. Each audited with --root into its own file."""
    base = tmp_path_factory.mktemp("cluster")
    roots = {name: base / name for name in ("node01", "node02", "node03")}
    for root in roots.values():
        root.mkdir()
    build_image(roots["node01"], "node01")
    kits.install_classic(kits.cuda13("13.1"), roots["node02"] / "usr/local/cuda-13.1", "13.1")
    broken = kits.install_classic(kits.cuda13("13.1"), roots["node02"] / "usr/local/cuda-13.0", "13.0")
    set_version_json(broken, sdk="13.0.0", cuda_nvcc="13.0.88", cuda_cudart="13.0.96")
    write_driver(roots["node02"], DRIVER_590, gpus=("NVIDIA H200", "NVIDIA H200"))
    kits.install_classic_runtime12(roots["node03"] / "usr/local/cuda-12.4")
    (roots["node03"] / "etc").mkdir()
    (roots["node03"] / "etc/hostname").write_text("node03\n")
    (roots["node02"] / "etc").mkdir()
    (roots["node02"] / "etc/hostname").write_text("node02\n")
    runner = Host(base / "node01", base / "work")
    files = {}
    for name, root in roots.items():
        proc = runner.run("audit", "--json", "--root", str(root), timeout=300)
        assert proc.returncode == 0, proc.stderr
        files[name] = base / (name + ".json")
        files[name].write_text(proc.stdout)
    files["bad"] = base / "node04.json"
    files["bad"].write_text(files["node02"].read_text()[:200])  # a node that died mid-write
    return runner, files


def merge(runner, *args, stdin=None):
    return subprocess.run([CUDASWITCH, "audit", "merge", *map(str, args)], input=stdin, capture_output=True,
                          text=True, timeout=120, env=runner.env)


def expected_rows():
    nvcc131, _ = wheel_versions("13.1")
    nvcc130, _ = wheel_versions("13.0")
    return nvcc131, nvcc130


def test_merge_three_reports_json_matrix(reports):
    runner, files = reports
    proc = merge(runner, files["node01"], files["node02"], files["node03"], "--json")
    assert proc.returncode == 0 and proc.stderr == ""
    merged = json.loads(proc.stdout)
    nvcc131, nvcc130 = expected_rows()
    assert [h["host"] for h in merged["hosts"]] == ["node01", "node02", "node03"]
    assert [h["driver"] for h in merged["hosts"]] == ["575.51.03", "590.44.01", None]
    rows = {row["version"]: row for row in merged["toolkits"]}
    assert list(rows) == [nvcc131, nvcc130, "12.4.131", None]
    assert rows[nvcc131]["ok_on"] == ["node01", "node02"] and rows[nvcc131]["missing_on"] == ["node03"]
    assert rows[nvcc131]["hosts"]["node01"]["copies"] == 2
    assert rows[nvcc130]["ok_on"] == ["node01"] and rows[nvcc130]["broken_on"] == ["node02"]
    assert rows[nvcc130]["missing_on"] == ["node03"]
    assert rows["12.4.131"]["incomplete_on"] == ["node01", "node03"] and rows["12.4.131"]["missing_on"] == ["node02"]
    assert rows[None]["broken_on"] == ["node01"] and rows[None]["hosts"]["node01"]["copies"] == 2
    assert merged["errors"] == []


def test_merge_table(reports):
    runner, files = reports
    proc = merge(runner, files["node01"], files["node02"], files["node03"])
    assert proc.returncode == 0, proc.stderr
    nvcc131, nvcc130 = expected_rows()
    cells = [re.split(" {2,}", line.strip()) for line in proc.stdout.splitlines()[:-1]]  # columns: 2+ spaces apart
    table = {row[0]: row[1:] for row in cells}
    assert table["VERSION"] == ["node01", "node02", "node03"]
    assert table[nvcc131] == ["ok x2", "ok", "-"]
    assert table[nvcc130] == ["ok x2", "broken", "-"]  # node01: /usr/local/cuda-13.0 and the conda env
    assert table["12.4.131"] == ["incomplete", "-", "incomplete"]
    assert table["? (no version)"] == ["broken x2", "-", "-"]
    assert "3 hosts merged" in proc.stdout


def test_malformed_report_is_named_and_the_rest_merge(reports):
    runner, files = reports
    proc = merge(runner, files["node01"], files["bad"], files["node03"], "--json")
    assert proc.returncode == 0
    assert proc.stderr.count("\n") == 1 and str(files["bad"]) in proc.stderr and "not JSON" in proc.stderr
    merged = json.loads(proc.stdout)
    assert [h["host"] for h in merged["hosts"]] == ["node01", "node03"]
    assert [e["file"] for e in merged["errors"]] == [str(files["bad"])]
    assert merge(runner, files["node01"], files["bad"], "--strict").returncode == 1
    none = merge(runner, files["bad"], runner.root / "missing.json")
    assert none.returncode == 1 and none.stdout == ""
    assert none.stderr.count("\n") == 3  # one line per refused input, then "no audit report could be read"


def test_merge_json_lines_on_stdin_as_pdsh_prints_them(reports):
    """`pdsh -w node[01-03] cudaswitch audit --json --compact | cudaswitch audit merge`: one report
    per line, each prefixed with the node name (pdsh and clush without -N)."""
    runner, files = reports
    lines = []
    for name in ("node01", "node02", "node03"):
        compact = json.dumps(json.loads(files[name].read_text()), separators=(",", ":"))
        lines.append("%s: %s" % (name, compact))
    lines.append("node04: Connection refused")
    proc = merge(runner, "--json", stdin="\n".join(lines) + "\n")
    assert proc.returncode == 0
    assert proc.stderr.strip() == ("cudaswitch: error: <stdin> line 4 (node04): "
                                   "not JSON (Expecting value: line 1 column 1 (char 0))")
    assert [h["host"] for h in json.loads(proc.stdout)["hosts"]] == ["node01", "node02", "node03"]


def test_compact_report_is_one_line(reports):
    runner, _ = reports
    proc = runner.run("audit", "--compact", "--root", str(runner.root))
    assert proc.returncode == 0 and proc.stdout.count("\n") == 1
    assert json.loads(proc.stdout)["host"] == "node01"


def test_many_hosts_get_one_line_per_version(reports):
    """Mirrors a 16-node partition: a 16-column matrix helps nobody, so the table names the nodes
    where each version is broken or missing, as a host list."""
    runner, files = reports
    base = json.loads(files["node03"].read_text())
    lines = [json.dumps({**base, "host": "gpu%02d" % n}) for n in range(1, 16)]
    lines.append(json.dumps(json.loads(files["node02"].read_text())))
    proc = merge(runner, stdin="\n".join(lines))
    assert proc.returncode == 0, proc.stderr
    rows = {r[0]: r[1:] for r in (re.split(" {2,}", line.strip()) for line in proc.stdout.splitlines()[:-1])}
    nvcc131, nvcc130 = expected_rows()
    assert rows["VERSION"] == ["OK", "INCOMPLETE", "BROKEN ON", "MISSING ON"]
    assert rows["12.4.131"] == ["0 hosts", "15 hosts", "-", "node02"]
    assert rows[nvcc130] == ["0 hosts", "0 hosts", "node02", "gpu[01-15]"]  # folded as pdsh writes host lists
    assert rows[nvcc131][:2] == ["1 host", "0 hosts"]


@pytest.mark.parametrize("breakage, says", [
    (lambda r: r.update(driver="575.51.03"), '"driver" is a JSON string'),
    (lambda r: r.update(gpus=2), '"gpus" is a JSON number'),
    (lambda r: r["toolkits"][0].update(version="banana"), 'toolkit 0 has a "version" that is not a CUDA version'),
    (lambda r: r.update(kind="cudaswitch-verify"), "not an audit report (kind 'cudaswitch-verify')"),
    (lambda r: r.update(format=99), "report format 99 is not one this cudaswitch reads"),
], ids=["driver", "gpus", "version", "kind", "format"])
def test_report_of_the_wrong_shape_is_named_and_the_rest_merge(reports, tmp_path, breakage, says):
    """Mirrors a node running another tool (or another cudaswitch) under the same collection
    script: valid JSON, but not a report this merge can read."""
    runner, files = reports
    report = json.loads(files["node03"].read_text())
    breakage(report)
    odd = tmp_path / "node05.json"
    odd.write_text(json.dumps(report))
    proc = merge(runner, files["node01"], odd, "--json")
    assert proc.returncode == 0, proc.stderr
    [line] = proc.stderr.splitlines()
    assert line.startswith("cudaswitch: error: %s: " % odd) and says in line, line
    assert [h["host"] for h in json.loads(proc.stdout)["hosts"]] == ["node01"]
