"""Planning on a login node (no GPU, no driver) for a compute node: `torch --node REPORT.json` with
the report a node's `audit --json` wrote under a gcc-built libcuda stand-in (a real shared library
answering cuInit / cuDriverGetVersion / the device queries), and CUDASWITCH_DRIVER / CUDASWITCH_GPUS
for `torch` and `use`'s verdict. The login node here is a host root without any driver."""

import json

import pytest

from tests import kits
from tests.conftest import Host
from tests.verify_support import build_libcuda


def node_report(tmp_path, cuda, gpus):
    """A compute node's `audit --json`, as `srun cudaswitch audit --json > gpu01.json` writes it."""
    node = Host(tmp_path / "node" / "root", tmp_path / "node" / "work")
    (node.root / "etc").mkdir(parents=True)
    (node.root / "etc/hostname").write_text("gpu01\n")
    libcuda = build_libcuda(tmp_path / "node" / "lib", cuda, init_rc=0, gpus=gpus)
    proc = node.run("audit", "--json", env={"CUDASWITCH_LIBCUDA": str(libcuda)}, timeout=300)
    assert proc.returncode == 0, proc.stderr
    path = tmp_path / "gpu01.json"
    path.write_text(proc.stdout)
    return path


def pick(result):
    """The build picked and the lines that install it (the checks' wording names the fact's source)."""
    chosen = result["recommended"]
    return chosen and (chosen["torch"], chosen["cuda"], chosen["install"])


def plan(host, *args, env=None):
    proc = host.run("torch", "--json", *args, env=env, timeout=300)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def test_torch_plans_for_the_node_its_report_describes(host, tmp_path):
    here = plan(host)
    assert here["driver"]["present"] is False and here["gpus"] == []  # the login node: no driver, no GPU
    report = node_report(tmp_path, 12040, ["sm_86"])
    there = plan(host, "--node", str(report))
    assert there["driver"]["cuda"] == "12.4" and [g["capability"] for g in there["gpus"]] == ["8.6"]
    assert here["recommended"] is None and there["recommended"]  # the facts are known: a build is picked
    by_options = plan(host, "--driver", "12.4", "--gpu", "sm_86")  # what one could type, from the report
    assert pick(there) == pick(by_options)
    newer = plan(host, "--node", str(node_report(tmp_path / "b", 12080, ["sm_90"])))
    assert [g["capability"] for g in newer["gpus"]] == ["9.0"]
    assert pick(newer) == pick(plan(host, "--driver", "12.8", "--gpu", "sm_90"))
    mixed = plan(host, "--node", str(report), "--driver", "12.8")  # an option wins over the report
    assert mixed["driver"]["cuda"] == "12.8" and [g["capability"] for g in mixed["gpus"]] == ["8.6"]


def test_the_variables_give_the_same_plan_as_the_report(host, tmp_path):
    report = plan(host, "--node", str(node_report(tmp_path, 12040, ["sm_86"])))
    env = {"CUDASWITCH_DRIVER": "12.4", "CUDASWITCH_GPUS": "sm_86"}
    variables = plan(host, env=env)
    assert variables["recommended"] and pick(variables) == pick(report)
    assert [g["capability"] for g in variables["gpus"]] == ["8.6"]
    two = plan(host, env={"CUDASWITCH_DRIVER": "570.86.10", "CUDASWITCH_GPUS": "sm_90,9.0"})
    assert two["driver"]["release"] == "570.86.10" and len(two["gpus"]) == 2


@pytest.mark.parametrize("text", ["", "not json", "[]", '{"kind": "other"}',
                                  '{"kind": "cudaswitch-audit", "driver": {"present": true, "cuda": "x"}, "gpus": []}',
                                  '{"kind": "cudaswitch-audit", "driver": null, "gpus": "sm_90"}'])
def test_a_malformed_report_is_one_line_and_exit_2(host, tmp_path, text):
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    proc = host.run("torch", "--node", str(bad))
    assert proc.returncode == 2 and proc.stdout == "" and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert "--node %s" % bad in proc.stderr and "audit --json" in proc.stderr and "Traceback" not in proc.stderr


def test_a_malformed_variable_is_one_line_and_exit_2(host):
    for env in ({"CUDASWITCH_DRIVER": "new"}, {"CUDASWITCH_GPUS": "sm_x"}):
        proc = host.run("torch", env=env)
        assert proc.returncode == 2 and proc.stdout == "" and len(proc.stderr.splitlines()) == 1, proc.stderr
        assert next(iter(env)) in proc.stderr


def test_use_judges_the_toolkit_for_the_named_driver(host, tmp_path):
    """A login node without a driver: `use 13.1` says "no driver"; with CUDASWITCH_DRIVER naming the
    compute nodes' 12.8 driver it says 12.8 cannot run 13.1, and with 13.0 it is fine."""
    kits.install_classic(kits.cuda13("13.1"), host.path("/usr/local/cuda-13.1"), "13.1")

    def verdict(env=None):
        proc = host.run("use", "13.1", "--shell", "bash", env=env, timeout=300)
        return [l for l in proc.stderr.splitlines() if l.startswith("cudaswitch: CUDA")]

    assert "no NVIDIA driver here" in verdict()[0]
    [old] = verdict({"CUDASWITCH_DRIVER": "12.8"})
    assert ": error: " in old and "12.8" in old
    [new] = verdict({"CUDASWITCH_DRIVER": "13.0"})
    assert ": ok (driver CUDA 13.0" in new
    audit = json.loads(host.run("audit", "--json", env={"CUDASWITCH_DRIVER": "13.0"}, timeout=300).stdout)
    assert audit["driver"] is None  # a report describes its own node, never the planned one
