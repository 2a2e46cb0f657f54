"""`list --runnable` on a host without a readable NVIDIA driver cannot tell what runs: it says so
and fails, rather than "none of the toolkits runs" with exit 0 (an empty answer a script would
take as the truth). With a driver, the filter answers as before."""

import json

from tests.test_list_runs_here import drive, runtime_toolkit

SHORTS = ("12.4", "12.8", "13.1")


def three_toolkits(host):
    for short in SHORTS:
        runtime_toolkit(host.path("/usr/local/cuda-%s" % short), short)
    return host


def test_without_a_driver_runnable_says_it_cannot_tell(host):
    three_toolkits(host)
    listed = json.loads(host.run("list", "--json", check=True).stdout)
    assert {i["runs_here"]["runs"] for i in listed} == {"cannot tell"}  # the host really has no driver
    for extra in ((), ("--json",)):
        proc = host.run("list", "--runnable", *extra)
        assert proc.returncode != 0 and proc.stdout == "", (extra, proc.stdout)
        [line] = proc.stderr.splitlines()
        assert "no NVIDIA driver is readable on this host: cannot tell which of the 3 toolkits" in line
        assert "none of" not in line and "Traceback" not in proc.stderr


def test_with_a_driver_runnable_still_filters(host, tmp_path):
    three_toolkits(host)
    proc = host.run("list", "--runnable", "--json", env=drive(host, tmp_path, "12.4"))
    assert proc.returncode == 0, proc.stderr
    assert sorted(i["short"] for i in json.loads(proc.stdout)) == ["12.4", "12.8"]
