"""The README's pdsh and clush pipelines over 64 node roots (tests/cluster_support.py): each node's
real `cudaswitch audit --json --compact` fanned out by the real engine (`-R exec`, %h per node),
piped into `audit merge`. The merge must name exactly the nodes that drifted."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests import kits
from tests.cluster_support import (DRIVER_CUDA, FAILING, HOSTLIST, LIBCUDA, NCCL, NODES, OTHER_DRIVER,
                                   OTHER_DRIVER_NODES, DRIVER, WITHOUT_124, build_cluster, merged_json, node_command,
                                   skewed_nodes)
from tests.conftest import CUDASWITCH, Host
from tests.verify_support import build_libcuda

DRIFTED = set(OTHER_DRIVER_NODES) | {WITHOUT_124, FAILING}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    base = build_cluster(tmp_path_factory.mktemp("cluster"))
    return base, Host(base / NODES[0], base / ".merge-work").env


def fan_out(engine, base, env):
    """pdsh or clush exactly as a cluster runs them, with the exec worker instead of ssh."""
    if engine == "pdsh":
        argv = [kits.require("pdsh"), "-R", "exec", "-f", "8", "-N", "-w", HOSTLIST, *node_command(base)]
    else:
        argv = [kits.require("clush"), "-R", "exec", "-f", "8", "-N", "-w", HOSTLIST, " ".join(node_command(base))]
    return subprocess.run(argv, capture_output=True, text=True, timeout=900, env=env, stdin=subprocess.DEVNULL,
                          start_new_session=True)


def merge(env, stdin, *args):
    return subprocess.run([CUDASWITCH, "audit", "merge", *args], input=stdin, capture_output=True, text=True,
                          timeout=300, env=env)


@pytest.fixture(scope="module", params=["pdsh", "clush"])
def collected(request, cluster):
    base, env = cluster
    proc = fan_out(request.param, base, env)
    # the failing node's own one-line error comes back through the engine, and nothing else fails
    assert FAILING in proc.stderr and "probe_timeout" in proc.stderr, proc.stderr[-3000:]
    assert proc.stdout.count("\n") == len(NODES) - 1, proc.stderr[-3000:]
    return request.param, proc.stdout


def test_merge_names_exactly_the_drifted_nodes(cluster, collected):
    _, env = cluster
    engine, lines = collected
    proc = merge(env, lines, "--json", "--nodes", HOSTLIST)
    assert proc.returncode == 0, proc.stderr
    merged = merged_json(proc)
    skew = merged["skew"]
    assert sorted(h["host"] for h in merged["hosts"]) == sorted(set(NODES) - {FAILING})
    assert skew["driver"]["releases"][OTHER_DRIVER] == OTHER_DRIVER_NODES
    assert sorted(skew["driver"]["branches"]) == ["570", "580"] and len(skew["driver"]["releases"][DRIVER]) == 61
    assert [(e["version"], e["missing_on"]) for e in skew["toolkits"]] == [("12.4", [WITHOUT_124])]
    assert [(e["version"], e["missing_on"]) for e in skew["components"]["nccl"]] == [(NCCL, [WITHOUT_124])]
    assert skew["missing"] == [FAILING] and skew["refused"] == []
    # R570 is a CUDA 12.8 driver: the 13.0 those two nodes carry cannot run there
    assert skew["driver_cannot_run"] == [{"toolkit": "13.0", "nodes": OTHER_DRIVER_NODES}]
    assert len(skew["gpus"]["models"]) == 3 and skew["gpus"]["cannot_target"] == []
    assert skewed_nodes(merged) == DRIFTED, engine
    # three images, and the drifted nodes split off them: driver 570 (type A), no 12.4 (type B)
    assert sorted(len(t["nodes"]) for t in merged["node_types"]) == [1, 2, 7, 15, 38]


def test_text_report_names_them(cluster, collected):
    _, env = cluster
    _, lines = collected
    proc = merge(env, lines, "--nodes", HOSTLIST)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    # the exceptions by name, the common driver by count (node61 sent no report)
    assert "skew: driver release: %s on node[07,33] (2); %s on the other 61" % (OTHER_DRIVER, DRIVER) in out, out
    assert "skew: driver branch: 570 on node[07,33] (2); 580 on the other 61" in out
    assert "skew: CUDA 12.4 is missing on node50 (on 62)" in out
    assert "skew: nccl %s is missing on node50 (on 62)" % NCCL in out
    assert "skew: no report from node61" in out
    assert "skew: the driver cannot run CUDA 13.0 on node[07,33]" in out


def test_strict_rules_exit_1_naming_the_nodes(cluster, collected):
    _, env = cluster
    _, lines = collected
    proc = merge(env, lines, "--strict", "--require", "cuda=12.4", "--same", "driver", "--nodes", HOSTLIST)
    assert proc.returncode == 1
    errors = [line for line in proc.stderr.splitlines() if line.startswith("cudaswitch: error: ")]
    assert errors == [
        "cudaswitch: error: no report from node61",
        "cudaswitch: error: require cuda=12.4: cuda 12.4 is not on 1 node: node50",
        "cudaswitch: error: same driver: 2 nodes differ in driver from %s (on 61): node[07,33]" % DRIVER,
    ], proc.stderr
    assert proc.stdout  # the report is still printed


def test_strict_passes_on_nodes_that_agree(cluster, collected):
    """The same rules over the nodes that did not drift: exit 0, so the rules are not always red."""
    _, env = cluster
    _, lines = collected
    healthy = "\n".join(line for line in lines.splitlines()
                        if not any('"host":"%s"' % node in line for node in DRIFTED)) + "\n"
    proc = merge(env, healthy, "--strict", "--require", "cuda=12.4", "--require", "nccl=2.21", "--same", "driver")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""


def test_a_gpu_the_toolkit_cannot_target(cluster, tmp_path):
    """Mirrors a V100 node left in a partition whose image moved to CUDA 13.0, which dropped
    Volta (compat.toml's arch table): the merge names the toolkit, the GPU and the node."""
    base, env = cluster
    old = tmp_path / "node99"
    subprocess.run(["cp", "-al", str(base / "node01"), str(old)], check=True, timeout=120)
    (old / LIBCUDA).unlink()
    shutil.copy(build_libcuda(tmp_path / "lib", DRIVER_CUDA, init_rc=0, gpus=["sm_70"] * 4), old / LIBCUDA)
    (old / "etc/hostname").unlink()  # a hardlink to node01's: never write through it
    (old / "etc/hostname").write_text("node99\n")
    reports = []
    for root in (base / "node01", old):
        node_env = {**env, "CUDASWITCH_ROOT": str(root), "CUDASWITCH_LIBCUDA": str(root / LIBCUDA)}
        proc = subprocess.run([CUDASWITCH, "audit", "--json", "--compact"], capture_output=True, text=True,
                              timeout=300, env=node_env, stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, proc.stderr
        reports.append(proc.stdout)
    merged = merged_json(merge(env, "".join(reports), "--json"))
    assert merged["skew"]["gpus"]["cannot_target"] == [
        {"toolkit": "13.0", "gpu": "sm_70", "model": "Tesla V100-SXM2-32GB", "nodes": ["node99"]}]
    text = merge(env, "".join(reports)).stdout
    assert "skew: CUDA 13.0 cannot target sm_70 (Tesla V100-SXM2-32GB) on node99" in text


HIGHLIGHT = (0xFF, 0xD5, 0x4F)  # td.skew's background in the page's stylesheet


def test_html_report_in_chromium(cluster, collected, tmp_path):
    """`--html`: Chromium loads the page offline with no console message; one column per node
    type, the drifted nodes' cells highlighted and no others in those rows; the filter from a
    link narrows the columns; the screenshot shows highlight only where the page has skew."""
    from tests import browser_support as browser

    _, env = cluster
    _, lines = collected
    page = tmp_path / "report.html"
    merged = merged_json(merge(env, lines, "--json", "--nodes", HOSTLIST, "--html", str(page)))
    dom_text, console = browser.load(page.as_uri(), tmp_path / "profile")
    assert console == []
    dom = browser.Dom(dom_text)
    assert dom.body.get("data-ready") == "1"
    types = {t["name"]: sorted(t["nodes"]) for t in merged["node_types"]}
    assert {g["name"]: sorted(g["nodes"]) for g in dom.groups} == types and len(dom.groups) == 5
    index = {name: i for i, name in enumerate(g["name"] for g in dom.groups)}
    group_of = {node: g["name"] for g in dom.groups for node in g["nodes"]}

    def highlighted(fact):
        return {name for name, i in index.items() if "skew" in dom.rows[fact]["cells"][i]["classes"]}

    assert highlighted("driver release") == {group_of[n] for n in OTHER_DRIVER_NODES}
    assert highlighted("CUDA 12.4.131") == {group_of[WITHOUT_124]} == highlighted("nccl")
    assert dom.rows["CUDA 12.4.131"]["cells"][index[group_of[WITHOUT_124]]]["text"] == "absent"
    assert highlighted("driver CUDA") == highlighted("driver release")  # R570 is a CUDA 12.8 driver
    # 13.0 is on every node, but the R570 nodes' driver cannot run it
    assert highlighted("CUDA 13.0.88") == highlighted("driver release")
    assert dom.rows["CUDA 13.0.88"]["cells"][index[group_of["node07"]]]["text"] == "ok, driver too old"
    assert "skew: no report from node61" in dom_text

    filtered = browser.Dom(browser.load(page.as_uri() + "#filter=node50", tmp_path / "profile")[0])
    assert [g["name"] for g in filtered.groups if not g["hidden"]] == [group_of[WITHOUT_124]]

    shot = Path(os.environ.get("CUDASWITCH_TEST_SCREENSHOTS", tmp_path)) / "report.png"
    assert browser.screenshot(page.as_uri(), tmp_path / "profile", shot) == []
    healthy = "\n".join(line for line in lines.splitlines() if not any('"host":"%s"' % n in line for n in DRIFTED
                                                                      ) and '"host":"node0' in line) + "\n"
    calm = tmp_path / "calm.html"
    merged_json(merge(env, healthy, "--json", "--html", str(calm)))
    calm_shot = tmp_path / "calm.png"
    browser.screenshot(calm.as_uri(), tmp_path / "profile", calm_shot)
    assert browser.count_colour(shot, HIGHLIGHT) > 500 and browser.count_colour(calm_shot, HIGHLIGHT) == 0


def test_the_console_check_sees_a_broken_page(tmp_path):
    """The control for the check above: a page whose script throws is caught by it."""
    from tests import browser_support as browser

    page = tmp_path / "broken.html"
    page.write_text("<html><body><script>console.error('boom'); missing();</script></body></html>")
    _, console = browser.load(page.as_uri(), tmp_path / "profile")
    assert len(console) == 2 and "boom" in console[0] and "missing is not defined" in console[1]


def test_html_at_10000_nodes(tmp_path):
    """10,000 generated node reports (bench/merge.py's, the shape of real ones; a few nodes drift):
    the page stays under 5 MiB, grouped into a few columns, and Chromium loads it without a
    console message."""
    from bench.merge import report
    from tests import browser_support as browser

    lines = "".join(json.dumps(report(n, 10_000), separators=(",", ":")) + "\n" for n in range(1, 10_001))
    page = tmp_path / "big.html"
    env = Host(tmp_path, tmp_path / "work").env
    merged = merged_json(merge(env, lines, "--json", "--html", str(page)))
    assert len(merged["hosts"]) == 10_000
    assert page.stat().st_size <= 5 * 2**20
    dom_text, console = browser.load(page.as_uri(), tmp_path / "profile")
    assert console == []
    dom = browser.Dom(dom_text)
    assert dom.body.get("data-ready") == "1"
    assert len(dom.groups) == len(merged["node_types"]) <= 8
    assert sum(len(g["nodes"]) for g in dom.groups) == 10_000


def test_pdsh_without_n_keeps_node_prefixes_and_still_merges(cluster):
    """README: "-N drops the node: prefix (kept is fine too)". Without -N every line starts with
    `nodeNN: `; the merge takes it off."""
    base, env = cluster
    argv = [kits.require("pdsh"), "-R", "exec", "-f", "4", "-w", "node[01-04]", *node_command(base)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600, env=env, stdin=subprocess.DEVNULL,
                          start_new_session=True)
    assert proc.returncode == 0 and all(line.startswith("node0") for line in proc.stdout.splitlines()), proc.stderr
    merged = merged_json(merge(env, proc.stdout, "--json", "--nodes", "node[01-04]"))
    assert sorted(h["host"] for h in merged["hosts"]) == ["node01", "node02", "node03", "node04"]
    assert merged["errors"] == [] and merged["skew"]["missing"] == []


def test_html_to_a_path_that_cannot_be_written_loses_nothing(cluster, collected, tmp_path):
    _, env = cluster
    _, lines = collected
    proc = merge(env, lines, "--html", str(tmp_path / "no/such/dir/report.html"))
    assert proc.returncode == 1 and proc.stdout == ""
    [line] = proc.stderr.splitlines()
    assert line.startswith("cudaswitch: error: cannot write ") and "report.html" in line
    assert list(tmp_path.iterdir()) == []
