"""Hostile wheels against the real `cudaswitch install 77.1 --from pypi`, served to pip from a
find-links dir with no index (tests/hostile_wheels.py builds them as NVIDIA's are built).

A wheel gets the unpack budget a redist archive gets (128 MiB + 40 times its size, members and the
dirs they need counted): a ~160 KB wheel declaring 160 MiB of zeros used to be unpacked in full
(3 MiB wrote 3 GiB); now it is refused from its central directory before anything is written.
Each refusal is one line, with nothing left in the toolkits dir."""

import os
import time

import pytest

from tests import hostile_wheels
from tests.install_support import drop_installed_trees, managed_items, toolkits_dir  # noqa: F401 (autouse fixture)

MIB = 1 << 20
BUDGET_LINE = "it unpacks to more than %d MiB (40 times its size plus 128 MiB at most); refused"


@pytest.fixture
def links(tmp_path):
    """A find-links dir holding the cuda-toolkit metapackage; each test adds its runtime wheel."""
    path = tmp_path / "links"
    path.mkdir()
    hostile_wheels.metapackage(path)
    return path


def install(host, links):
    return host.run("install", "77.1", "--from", "pypi", "--components", "cudart",
                    env=hostile_wheels.pip_env_with_only(links), timeout=300)


def refused(proc):
    """The one line a refusal is: non-zero, nothing on stdout, no traceback; returns the line."""
    assert proc.returncode != 0 and proc.stdout == "", (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    [line] = [line for line in proc.stderr.splitlines() if line.startswith("cudaswitch: error: ")]
    assert proc.stderr.splitlines()[-1] == line, proc.stderr
    assert line.endswith("(nothing was installed)"), line
    return line


def nothing_installed(host):
    """Nothing but the version's lock file is left in the toolkits dir, and nothing is listed."""
    base = toolkits_dir(host)
    left = sorted(e for e in os.listdir(base) if not e.startswith(".lock-")) if base.is_dir() else []
    assert left == [] and managed_items(host) == [], left


def budget_mib(wheel):
    return (128 * MIB + 40 * os.path.getsize(wheel)) >> 20


def test_a_plain_wheel_installs(host, links):
    """The control for every refusal below: the same metapackage and a sound runtime wheel
    make a toolkit (incomplete: no nvcc), so a refusal is the budget's, not a bad fake wheel's."""
    hostile_wheels.runtime_wheel(links, {"include/cuda_runtime.h": b"#pragma once\n",
                                         "lib/libcudart.so.77": b"\x7fELF" + bytes(4 * MIB)})
    proc = install(host, links)
    assert proc.returncode == 0, proc.stderr
    [item] = managed_items(host)
    root = toolkits_dir(host) / hostile_wheels.RELEASE
    assert item["root"] == str(root) and item["status"] == "incomplete"
    assert (root / "include/cuda_runtime.h").read_bytes() == b"#pragma once\n"
    assert (root / "lib64/libcudart.so.77.1.5").stat().st_size == 4 + 4 * MIB


def test_zip_bomb_is_refused_before_anything_is_written(host, links):
    """A ~160 KB wheel whose one member is 160 MiB of zeros (its sizes honest): the old unpack
    wrote all of it and installed the toolkit."""
    wheel = hostile_wheels.runtime_wheel(links, {"lib/libcudart.so.77": hostile_wheels.zeros(160 * MIB)})
    assert os.path.getsize(wheel) < 1 * MIB
    started = time.monotonic()
    line = refused(install(host, links))
    assert os.path.basename(wheel) + ": " + BUDGET_LINE % budget_mib(wheel) in line, line
    assert time.monotonic() - started < 60
    nothing_installed(host)


def test_a_member_lying_about_its_size_writes_only_what_it_declares(host, links):
    """A member declaring 64 KiB (with the CRC of 64 KiB of zeros) over a deflate stream of
    160 MiB: passes the declared budget, and the unpack stops at what it declared."""
    hostile_wheels.runtime_wheel(links, {"lib/libcudart.so.77": hostile_wheels.liar(64 << 10, 160 * MIB),
                                         "include/cuda_runtime.h": b"#pragma once\n"})
    proc = install(host, links)
    assert proc.returncode == 0, proc.stderr
    root = toolkits_dir(host) / hostile_wheels.RELEASE
    assert (root / "lib64/libcudart.so.77.1.5").stat().st_size == 64 << 10
    assert sum(f.stat().st_size for f in root.rglob("*") if f.is_file() and not f.is_symlink()) < 1 * MIB


def test_a_lying_member_over_the_budget_is_refused(host, links):
    """A member that declares 160 MiB but holds nothing (zipfile writes the empty file without
    complaint): what a wheel declares is charged, as a tar member's size is."""
    wheel = hostile_wheels.runtime_wheel(links, {"lib/libcudart.so.77": hostile_wheels.liar(160 * MIB, 0)})
    line = refused(install(host, links))
    assert BUDGET_LINE % budget_mib(wheel) in line, line
    nothing_installed(host)


def test_members_and_the_dirs_they_need_are_counted(host, links):
    """500 empty files, each at the end of its own 60 dirs, in a ~200 KB wheel: 30,500 things to
    make for a wheel whose size allows about 7,300 (4,096 + one per 64 bytes), as for a redist
    archive. The old unpack made every dir and installed the toolkit."""
    wheel = hostile_wheels.runtime_wheel(links, hostile_wheels.deep_files(500, 60))
    allowed = 4096 + os.path.getsize(wheel) // 64
    assert allowed < 500 * 61
    line = refused(install(host, links))
    assert "%s: it has more than %d members for its size; refused" % (os.path.basename(wheel), allowed) in line
    nothing_installed(host)


def test_a_bzip2_member_is_refused(host, links):
    """zipfile inflates a bzip2 member without bounding its output in memory; NVIDIA's wheels
    use deflate, so any other method is refused before it is read."""
    def bzip2_member(archive, name):
        archive.writestr(name, b"\0" * 1024, compress_type=12)  # zipfile.ZIP_BZIP2

    hostile_wheels.runtime_wheel(links, {"lib/libcudart.so.77": bzip2_member})
    line = refused(install(host, links))
    assert "uses zip compression method 12; refused" in line, line
    nothing_installed(host)

