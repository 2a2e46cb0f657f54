"""torch_builds.toml, the one table of torch builds: every row carries an evidence kind and a known
source, the loader refuses a row that does not (a hand-typed list passing for a fact is how
`cudaswitch torch` came to call a build without sm_61 a fit for a GTX 1080 Ti), and verify's hint
reads the same rows as `cudaswitch torch`. The rules are written out again here on purpose."""

import re
from importlib import resources

import pytest

from cudaswitch.verify import facttables as facts

SHIPPED = resources.files("cudaswitch.data").joinpath("torch_builds.toml").read_text("utf-8")
KIND_FIELDS = {"wheel": ("wheel", "sha256"), "build-script": ("path", "commit"), "release-pr": ("pr",),
               "published": ("url",), "none": ()}


def test_every_shipped_row_has_evidence_and_a_known_source():
    table, sources = facts.torch_table(), facts.tables()["sources"]
    assert len(table["build"]) >= 20
    for row in table["build"]:
        assert row["evidence"] in KIND_FIELDS and row["source"] in sources, row
        assert all(row.get(k) for k in KIND_FIELDS[row["evidence"]]), row
        assert bool(row.get("arch")) == (row["evidence"] != "none"), row
    for row in table["driver_branch"]:
        assert row["source"] in sources and row["evidence"], row


def test_one_wheel_read_per_release_from_20_to_215():
    """The PyPI wheel of every release 2.0 ... 2.15 was read into the table, with its file and hash;
    1.12 and 1.13 rest on the build script (their wheels give the reader no list)."""
    wheels = {r["torch"]: r for r in facts.torch_rows() if r["evidence"] == "wheel"}
    assert sorted(wheels, key=lambda v: int(v.split(".")[1])) == ["2.%d" % n for n in range(0, 16)]
    old = {(r["torch"], r["cuda"]): r["evidence"] for r in facts.torch_rows() if r["torch"].startswith("1.")}
    assert old == {("1.12", "10.2"): "build-script", ("1.12", "11.3"): "build-script",
                   ("1.12", "11.6"): "build-script", ("1.13", "11.6"): "build-script", ("1.13", "11.7"): "build-script"}
    for row in wheels.values():
        assert row["wheel"].startswith("torch-%s-" % row["release"]) and re.fullmatch(r"[0-9a-f]{64}", row["sha256"])
    assert facts.newest_torch_known() == "2.15"


def test_the_facts_the_table_must_hold():
    """Linux cu128 wheels of 2.7 and later start at sm_75 (2.7) or sm_70 (2.8+), never sm_50/sm_60;
    release wheels carry no PTX where PyTorch stripped it (2.6 cu126 has no compute_90)."""
    rows = {(r["torch"], r["cuda"]): r for r in facts.torch_rows()}
    for (_, cuda), row in rows.items():
        if cuda == "12.8" and row["evidence"] != "none":
            assert not {"sm_50", "sm_60"} & set(row["arch"]), row
    assert rows[("2.7", "12.8")]["arch"][0] == "sm_75" and "compute_120" in rows[("2.7", "12.8")]["arch"]
    assert "compute_90" not in rows[("2.6", "12.6")]["arch"] and rows[("2.6", "12.6")]["evidence"] == "release-pr"
    assert rows[("2.14", "13.0")]["arch"] == ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]


ROW = '''
[sources]
S = "a source"
[[build]]
torch = "2.9"
cuda = "12.8"
platform = "linux-x86_64"
arch = ["sm_70"]
evidence = "wheel"
source = "S"
wheel = "torch-2.9.1-cp311-cp311-manylinux_2_28_x86_64.whl"
sha256 = "%s"
''' % ("ab" * 32)


@pytest.mark.parametrize("edit,message", [
    (lambda t: t.replace('evidence = "wheel"\n', ""), "evidence None"),
    (lambda t: t.replace('evidence = "wheel"', 'evidence = "hearsay"'), "evidence 'hearsay'"),
    (lambda t: t.replace('source = "S"\n', ""), "source None"),
    (lambda t: t.replace('source = "S"', 'source = "T"'), "source 'T'"),
    (lambda t: t.replace('sha256 = "%s"\n' % ("ab" * 32), ""), "lacks sha256"),
    (lambda t: t.replace("ab" * 32, "not-a-hash"), "sha256 is not"),
    (lambda t: t.replace('arch = ["sm_70"]\n', ""), "needs an arch list"),
    (lambda t: t.replace('"sm_70"', '"sm70; rm -rf /"'), "needs an arch list"),
    (lambda t: t.replace('platform = "linux-x86_64"', 'platform = "macos"'), "platform 'macos'"),
    (lambda t: t + t[t.index("[[build]]"):], "repeats torch 2.9 CUDA 12.8"),
])
def test_the_loader_refuses_a_row_without_its_evidence(edit, message):
    facts.parse_torch_table(ROW, "t.toml")  # the row as given loads
    with pytest.raises(facts.TableError) as caught:
        facts.parse_torch_table(edit(ROW), "t.toml")
    assert message in caught.value.message and "\n" not in caught.value.message


def test_a_build_without_evidence_loads_but_has_no_list():
    text = ROW.replace('evidence = "wheel"', 'evidence = "none"').replace('arch = ["sm_70"]\n', "")
    [row] = facts.parse_torch_table(text)["build"]
    assert row["evidence"] == "none" and "arch" not in row


def test_verify_hint_pins_a_release_that_has_the_gpu_code():
    """A V100 (sm_70) without code: verify's hint names a pinned release of the same table, one
    whose row has sm_70 (an unpinned cu128 install gets 2.7's list, which starts at sm_75)."""
    from cudaswitch.verify.checks import arch_in_build

    device = {"name": "Tesla V100-SXM2-32GB", "capability": "7.0"}
    item = arch_in_build(device, ["sm_75", "sm_80"], {"torch": "2.14.1+cu130"})
    release, cuda = item["facts"]["builds_with_arch"][0]
    pin = re.search(r'pip install "torch==(\d+\.\d+)\.\*" --index-url https://download.pytorch.org/whl/cu(\d+)',
                    item["hint"])
    assert pin and pin.groups() == (release, cuda.replace(".", "")), item["hint"]
    [row] = [r for r in facts.torch_rows() if (r["torch"], r["cuda"]) == (release, cuda)]
    assert "sm_70" in row["arch"] and row["evidence"] != "none"
