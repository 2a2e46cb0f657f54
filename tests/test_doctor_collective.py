"""`doctor --collective` with the real torch 2.13 CPU build: two ranks on loopback, one gloo
all_reduce. It works as is; with GLOO_SOCKET_IFNAME naming an interface this host lacks (a job
script copied from a cluster whose NIC is ib0) it fails within its timeout and says the interface
layer failed."""

import time

from tests.verify_support import by_id, report, torch_venv


def collective(host, *extra, env=None):
    python = str(torch_venv() / "bin" / "python")
    started = time.monotonic()
    proc = host.run("doctor", "--collective", "--python", python, "--json", *extra, env=env, timeout=600)
    return proc, report(proc), time.monotonic() - started


def test_two_ranks_all_reduce_on_loopback(host):
    _, out, _ = collective(host)
    [result] = by_id(out, "collective.all_reduce")
    assert result["level"] == "ok" and "gloo on CPU" in result["message"], result["message"]
    assert [r["sum"] for r in result["facts"]["ranks"]] == [2.0, 2.0]
    plain = report(host.run("doctor", "--python", str(torch_venv() / "bin" / "python"), "--json", timeout=600))
    assert not by_id(plain, "collective.all_reduce")  # only when asked: it starts two torch processes


def test_an_interface_that_does_not_exist_is_named_within_the_timeout(host):
    proc, out, took = collective(host, "--timeout", "40", env={"GLOO_SOCKET_IFNAME": "nosuch0"})
    [result] = by_id(out, "collective.all_reduce")
    assert result["level"] == "error" and proc.returncode == 1
    assert result["facts"]["layer"] == "interface" and "failed at the interface layer" in result["message"]
    assert "nosuch0" in result["message"] and "GLOO_SOCKET_IFNAME" in result["hint"]
    assert took < 40 + 30  # the ranks' own limit, plus the rest of doctor
