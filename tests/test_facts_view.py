"""`cudaswitch facts` says what cudaswitch knows and how old it is; `facts refresh` reads the redist
index `install` reads (served over HTTP as a site mirror serves it) for releases newer than the
shipped driver table and the driver each bundles, caches them and shows them apart, marked with the
day read, never in place of a shipped fact. The releases mirror NVIDIA's: 13.2.0 (R595) and 13.3.1
(R610) are in the shipped table, 13.4.1 (the GA of 13.4, bundles 615.71.09) is newer."""

import datetime
import json

from tests import redist_mirror
from tests.test_json_schemas import validate

RELEASES = {"13.1.2": ("2026-03-05", "590.48.01"), "13.2.0": ("2026-03-03", "595.45.04"),
            "13.3.0": ("2026-05-19", None), "13.3.1": ("2026-06-23", "610.43.02"),
            "13.4.1": ("2026-09-09", "615.71.09"), "13.4.2": ("2026-09-16", "615.80.01")}


def test_facts_names_the_newest_of_each_table_with_source_and_date(host):
    proc = host.run("facts")
    assert proc.returncode == 0 and proc.stderr == ""
    lines = proc.stdout.splitlines()
    assert lines[0] == "newest CUDA release: 13.5 (13.5.0, 2026-11-04)"
    assert lines[2] == "newest driver branch: R610 (CUDA 13.3 needs 610.43.02)"
    assert lines[4].startswith("newest GPU architecture: sm_107 (from CUDA 13.4)")
    assert lines[6] == "newest torch release: 2.15 (2.15.0, CUDA 13.2)"
    assert all(line.startswith("  source: ") and ", read 2026-" in line for line in lines[1:8:2])
    found = json.loads(host.run("facts", "--json").stdout)
    validate(found, "facts")
    shipped = found["shipped"]
    assert {k: (v["source"], v["retrieved"]) for k, v in shipped.items()} == {
        "cuda": ("PyPI-cuda-toolkit", "2026-12-04"), "driver_branch": ("NV-redist", "2026-12-04"),
        "gpu_arch": ("nvcc-list", "2026-12-04"), "torch": ("PyPI-wheel", "2026-12-01")}


def test_refresh_reads_the_drivers_of_newer_releases_and_keeps_them_apart(host, tmp_path):
    served = redist_mirror.Mirror(redist_mirror.driver_index(tmp_path / "mirror", RELEASES))
    try:
        proc = host.run("facts", "refresh", "--mirror", served.url, "--json")
    finally:
        served.close()
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    found = json.loads(proc.stdout)
    validate(found, "facts")
    today = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    assert found["refreshed"]["read"] == today and found["refreshed"]["base"] == served.url
    assert found["refreshed"]["releases"] == [
        {"cuda": "13.4", "label": "13.4.1", "driver": "615.71.09", "date": "2026-09-09"}]
    assert found["shipped"]["driver_branch"]["branch"] == "R610"  # the shipped fact stays as shipped
    # the index is gone: one line on stderr, and the facts read before
    offline = host.run("facts", "refresh", "--mirror", served.url)
    assert offline.returncode == 0 and len(offline.stderr.strip().splitlines()) == 1
    assert "showing the facts cudaswitch already has" in offline.stderr
    assert "from the redist index of %s (%s):" % (today, served.url) in offline.stdout
    assert "  CUDA 13.4 (13.4.1, 2026-09-09): driver 615.71.09 or newer" in offline.stdout
    assert host.run("facts").stdout == offline.stdout


def test_refresh_of_an_index_never_read_says_so_in_one_line(host, tmp_path):
    proc = host.run("facts", "refresh", "--mirror", "file://%s/none" % tmp_path)
    assert proc.returncode == 0 and len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert "from the redist index: nothing yet" in proc.stdout
