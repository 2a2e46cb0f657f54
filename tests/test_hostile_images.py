"""Small images that cost the audit minutes or hundreds of MiB, as real oci-archive and
docker-archive files (tests/hostile_images.py, written by skopeo): a pax header in the image's own
archive (tarfile's quadratic parser: 256 KiB held `audit --image` for 70 s), one blob listed as
hundreds of layers, a layer of hundreds of thousands of links, one of implicit directories. Each
is refused in one line (exit 1, nothing on stdout, no traceback) or audited, within a minute
where the old code took minutes; bench/hostile_images.py measures time and memory."""

import json

import pytest

from tests import hostile_images as hostile

TRANSPORTS = ("oci-archive", "docker-archive")
# the budget a user meets (cudaswitch/audit/layers.py BUDGET), as its refusals state it
EXPANDED, LINKS, DIRS = 64 << 30, 100_000, 200_000


def audit(host, ref, timeout=60):
    return host.run("audit", "--image", ref, "--driver", "550.54.15", "--no-progress", "--json", timeout=timeout)


def refused(proc, expected):
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == "" and "Traceback" not in proc.stderr, proc.stderr
    [line] = proc.stderr.splitlines()
    assert line.startswith("cudaswitch: error: ") and expected in line, line


def toolkits(proc):
    assert proc.returncode == 0, proc.stderr
    return [t["version"] for t in json.loads(proc.stdout)["toolkits"]]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """{case: {transport: ref}}, built once: skopeo writes each image twice."""
    base = tmp_path_factory.mktemp("hostile-images")
    tool = hostile.toolkit_layer()
    cases = {"pax-256KiB": [tool], "pax-60k-digits": [tool],
             "one-blob-512-times": [tool, hostile.zeros_layer(64)],
             "one-blob-past-the-budget": [tool, hostile.zeros_layer(200)],
             "links": [tool, hostile.links_layer(LINKS + 1000)],
             "dirs": [tool, hostile.dirs_layer(DIRS // 127 + 100)]}
    refs = {case: hostile.archives(base / case, listed) for case, listed in cases.items()}
    for transport in TRANSPORTS:
        hostile.relist(refs["one-blob-512-times"][transport], 511)
        hostile.relist(refs["one-blob-past-the-budget"][transport], EXPANDED // (200 << 20) + 1)
        hostile.with_pax_header(refs["pax-256KiB"][transport], 256 << 10)
        hostile.with_pax_header(refs["pax-60k-digits"][transport], 60_000)
    return refs


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_pax_header_in_the_image_archive_is_refused_not_parsed(host, built, transport):
    """The old code parsed it with tarfile's own parser: 70 s, then the image was audited."""
    refused(audit(host, built["pax-256KiB"][transport]), "a pax header of 262144 bytes (more than 65536)")
    refused(audit(host, built["pax-60k-digits"][transport]), "run of more than 64 digits")


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_one_blob_listed_512_times_is_read_once(host, built, transport):
    """511 listings of a 64 MiB layer were 32 GiB inflated and hashed (minutes); now one reading."""
    assert toolkits(audit(host, built["one-blob-512-times"][transport])) == ["12.4.127"]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_one_blob_listed_past_the_expanded_budget_is_refused(host, built, transport):
    refused(audit(host, built["one-blob-past-the-budget"][transport]), "expands to more than 64 GiB")


@pytest.mark.parametrize("case, expected", [("links", "more than 100,000 links"),
                                            ("dirs", "more than 200,000 directories")])
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_layer_of_links_or_dirs_past_the_budget_is_refused(host, built, transport, case, expected):
    """The old code held every one in memory and wrote the links to its view."""
    refused(audit(host, built[case][transport]), expected)


def test_a_blob_listed_again_is_applied_again_at_its_place(host, tmp_path):
    """Replayed, not skipped: a toolkit removed by layer 2 is back when layer 1's blob is listed third."""
    tool = hostile.toolkit_layer()
    removal = hostile.packed(hostile.tar_of([("usr/local/.wh.cuda-12.4", "file", b"")]))
    gone = hostile.archives(tmp_path / "gone", [tool, removal])["oci-archive"]
    back = hostile.archives(tmp_path / "back", [tool, removal, tool])["docker-archive"]
    assert toolkits(audit(host, gone)) == []
    assert toolkits(audit(host, back)) == ["12.4.127"]
