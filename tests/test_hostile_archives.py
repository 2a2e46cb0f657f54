"""A hostile redist mirror against the real `cudaswitch install 77.1.0 --mirror URL`, served from
127.0.0.1 by a thread (tests/hostile_mirror.py) or from file://, with archives from
tests/hostile_archives.py whose sizes and sha256 match the manifest, so only the unpack and the
transfer rules stand between the mirror and the user's files.

What each test mirrors: the CVE-2025-4517 link chain that overwrote ~/.bashrc through tarfile's
`data` filter; a 46 KB archive of 300 MiB of zeros; a server that drips a byte every 2 s (body
or headers); an endless manifest; a redirect to another host; a FIFO in a file:// mirror; and a
seeded corpus of 300+ hostile archives unpacked by the real unpack code, a handful through the CLI.
"""

import os
import shutil
import stat
import sys
import tarfile
import time
from pathlib import Path

import pytest

from cudaswitch.errors import CudaSwitchError
from cudaswitch.install import redist_tree
from tests import hostile_archives, hostile_mirror
from tests.conftest import Host
from tests.install_support import drop_installed_trees, managed_items, toolkits_dir  # noqa: F401 (autouse fixture)

BASHRC = "# the user's own rc file\nexport PATH=$HOME/bin:$PATH\n"
CORPUS_SEED, CORPUS_SIZE = 22, 320
CLIMB = 6  # levels from the tree an install unpacks to up to the host's base dir: work/data/toolkits/...


def new_host(base):
    """A host whose HOME is base/home (with a .bashrc to overwrite), beside its data dir."""
    (base / "root").mkdir(parents=True)
    (base / "work").mkdir()
    (base / "home").mkdir()
    (base / "home" / ".bashrc").write_text(BASHRC)
    host = Host(base / "root", base / "work")
    host.env["HOME"] = str(base / "home")
    return host


def outside_install(host, base):
    """Everything under base except the managed dir and the cache (what an install may write)."""
    return hostile_mirror.snapshot(base, skip={host.work / "data", host.work / "cache"})


def one_error_line(proc):
    assert proc.returncode != 0 and proc.stdout == "", (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("cudaswitch: error: ")]
    assert errors == proc.stderr.splitlines()[-1:], proc.stderr
    return errors[0]


def nothing_installed(host):
    base = toolkits_dir(host)
    left = sorted(e for e in os.listdir(base) if not e.startswith(".lock-")) if base.is_dir() else []
    assert left == [] and managed_items(host) == [], left


def build_dest_len(host):
    """Length of the path the cuda_nvcc archive is unpacked to (a 5-digit pid assumed)."""
    return len(str(toolkits_dir(host) / (".tmp-%s-99999" % hostile_mirror.RELEASE) / "unpacked" / "cuda_nvcc"))


def cve_archive(host):
    """The CVE-2025-4517 archive aimed at this host's ~/.bashrc: from the tree's bin/ it climbs
    bin, cuda_nvcc, unpacked, .tmp-*, toolkits, data, work: 7 levels to the base, then home/."""
    return hostile_archives.tar_bytes([hostile_archives.info("dir", hostile_archives.TOP)] +
                                      hostile_archives.cve_2025_4517(build_dest_len(host), 7, "home/.bashrc"))


@pytest.mark.skipif(sys.version_info >= (3, 11, 13), reason="this Python's data filter has the CVE-2025-4517 fix")
def test_the_cve_archive_really_fools_this_pythons_data_filter(tmp_path):
    """The archive below is a real exploit here: tarfile's own `data` filter, as the unpack used to
    call it, lets it truncate the file it aims at. (Run where Python is older than 3.11.13.)"""
    host = new_host(tmp_path)
    dest = toolkits_dir(host) / (".tmp-%s-99999" % hostile_mirror.RELEASE) / "unpacked" / "cuda_nvcc"
    dest.mkdir(parents=True)
    archive = tmp_path / "a.tar.xz"
    archive.write_bytes(cve_archive(host))
    def untop(name):
        return name.split("/", 1)[1] if "/" in name else name

    with tarfile.open(archive, "r|*") as source:  # members placed as the unpack did: top dir stripped
        for member in source:
            placed = member.replace(name=untop(member.name), deep=False)
            if member.islnk():
                placed = placed.replace(linkname=untop(member.linkname), deep=False)
            source.extract(placed, dest, filter="data")
    assert (tmp_path / "home" / ".bashrc").read_text() != BASHRC  # written outside through the links


def test_cve_2025_4517_link_chain_cannot_overwrite_bashrc(tmp_path):
    """A mirror whose cuda_nvcc archive is the CVE-2025-4517 link chain aimed at ~/.bashrc: the
    failed install made it to `nothing was installed` and overwrote the file on the way."""
    host = new_host(tmp_path)
    redist = hostile_mirror.build(tmp_path / "mirror" / "redist", cve_archive(host))
    served = hostile_mirror.HostileServer(tmp_path / "mirror")
    before = outside_install(host, tmp_path)
    try:
        line = one_error_line(host.run("install", hostile_mirror.RELEASE, "--mirror", served.url, timeout=300))
    finally:
        served.close()
    assert "cuda_nvcc-linux-x86_64-77.1.0-archive.tar.xz: archive member" in line, line
    assert "refused" in line and "nothing was installed" in line, line
    assert (tmp_path / "home" / ".bashrc").read_text() == BASHRC
    assert outside_install(host, tmp_path) == before
    assert redist.is_dir()
    nothing_installed(host)


def test_cve_archive_is_stopped_by_the_link_rule_alone(tmp_path, monkeypatch):
    """Without the length cap (which the long names hit first), the rule that no member's parent
    path may pass through a link stops the same archive, and the canary stays as it was."""
    from cudaswitch.install import untar

    monkeypatch.setattr(untar, "MAX_PATH", 1 << 16)
    host = new_host(tmp_path)
    dest = toolkits_dir(host) / (".tmp-%s-99999" % hostile_mirror.RELEASE) / "unpacked" / "cuda_nvcc"
    data = cve_archive(host)
    (tmp_path / "a.tar.xz").write_bytes(data)
    with pytest.raises(CudaSwitchError) as refused:
        redist_tree.unpack(str(tmp_path / "a.tar.xz"), _entry(data), str(dest))
    assert "passes through a link" in refused.value.message, refused.value.message
    assert (tmp_path / "home" / ".bashrc").read_text() == BASHRC
    assert sorted(os.listdir(tmp_path)) == ["a.tar.xz", "home", "root", "work"]


@pytest.fixture(scope="module")
def bomb():
    """46 KB of xz that unpacks to 300 MiB of zeros (built once: about 6 s)."""
    return hostile_archives.zeros_bomb(300)


def test_zeros_bomb_is_refused_in_seconds_and_installs_nothing(tmp_path, bomb):
    """A 46 KB archive of 300 MiB of zeros took 3-4 minutes to unpack before the install failed;
    now the unpack stops at its budget (40 times the archive plus 128 MiB)."""
    host = new_host(tmp_path)
    hostile_mirror.build(tmp_path / "mirror", bomb)
    started = time.monotonic()
    line = one_error_line(host.run("install", hostile_mirror.RELEASE, "--mirror", (tmp_path / "mirror").as_uri(),
                                   timeout=300))
    assert "cuda_nvcc-linux-x86_64-77.1.0-archive.tar.xz: it unpacks to more than 129 MiB" in line, line
    assert "nothing was installed" in line
    assert time.monotonic() - started < 60
    nothing_installed(host)


@pytest.mark.parametrize("what, drip_headers", [
    ("index", False), ("manifest", True), ("archive", False)])
def test_dripping_server_is_given_up_at_the_deadline(tmp_path, what, drip_headers):
    """A server that sends one byte every 2 s (after honest headers, or the headers themselves)
    never ended the install: each read came within its timeout. Now the whole transfer has a
    deadline (set short here through CUDASWITCH_REDIST_DEADLINE)."""
    host = new_host(tmp_path)
    redist = hostile_mirror.build(tmp_path / "mirror" / "redist", hostile_archives.tar_bytes(
        [hostile_archives.info("dir", hostile_archives.TOP)]))
    served = hostile_mirror.HostileServer(tmp_path / "mirror")
    served.server.drip.add({"index": "redist", "manifest": "redistrib_77.1.0.json",
                            "archive": hostile_mirror.archive_name("cuda_nvcc")}[what])
    served.server.drip_headers = drip_headers
    started = time.monotonic()
    try:
        proc = host.run("install", hostile_mirror.RELEASE, "--mirror", served.url, timeout=60,
                        env={"CUDASWITCH_REDIST_DEADLINE": "3"})
    finally:
        served.close()
    line = one_error_line(proc)
    assert time.monotonic() - started < 30
    assert ("took longer than 3 s in all" in line or "did not answer within 3 s" in line), line
    assert redist.is_dir()
    nothing_installed(host)


def test_bad_deadline_setting_is_one_line(tmp_path):
    host = new_host(tmp_path)
    hostile_mirror.build(tmp_path / "mirror" / "redist", hostile_archives.tar_bytes([]))
    served = hostile_mirror.HostileServer(tmp_path / "mirror")
    try:
        proc = host.run("install", hostile_mirror.RELEASE, "--mirror", served.url,
                        env={"CUDASWITCH_REDIST_DEADLINE": "soon"})
    finally:
        served.close()
    assert "CUDASWITCH_REDIST_DEADLINE=soon is not a positive number of seconds" in one_error_line(proc)


def test_endless_manifest_is_refused_at_64_mib(tmp_path):
    """A manifest with no length that never ends was read whole into memory (a 1 GiB one took
    3.1 GB of RSS). Now a document read is capped at 64 MiB; this one is 96 MiB."""
    host = new_host(tmp_path)
    hostile_mirror.build(tmp_path / "mirror" / "redist", hostile_archives.tar_bytes([]))
    served = hostile_mirror.HostileServer(tmp_path / "mirror")
    served.server.endless.add("redistrib_77.1.0.json")
    try:
        proc = host.run("install", hostile_mirror.RELEASE, "--mirror", served.url, timeout=120)
    finally:
        served.close()
    line = one_error_line(proc)
    assert "redistrib_77.1.0.json is larger than 64 MiB" in line and "refused" in line, line
    nothing_installed(host)


def test_redirect_to_another_host_is_refused(tmp_path):
    """The mirror the user named answers every request with a redirect to another host and port;
    urllib followed it silently, so the install came from a server nobody named."""
    host = new_host(tmp_path)
    hostile_mirror.build(tmp_path / "mirror" / "redist", hostile_archives.tar_bytes([]))
    other = hostile_mirror.HostileServer(tmp_path / "mirror")
    named = hostile_mirror.HostileServer(tmp_path / "mirror")
    named.server.redirect = "http://localhost:%d/redist/" % other.port
    try:
        proc = host.run("install", "--list", "--json", "--mirror", named.url, timeout=60)
    finally:
        named.close()
        other.close()
    line = one_error_line(proc)
    assert "redirects to http://localhost:%d/redist/" % other.port in line, line
    assert "another scheme, host or port; refused" in line


def test_redirect_on_the_same_host_is_followed(tmp_path):
    host = new_host(tmp_path)
    hostile_mirror.build(tmp_path / "mirror" / "real", hostile_archives.tar_bytes([]))
    served = hostile_mirror.HostileServer(tmp_path / "mirror")
    served.server.redirect = "http://127.0.0.1:%d/real/" % served.port
    try:
        proc = host.run("install", "--list", "--json", "--mirror", served.url, timeout=60)
    finally:
        served.close()
    assert proc.returncode == 0, proc.stderr
    assert "77.1.0" in proc.stdout


def test_fifo_manifest_in_a_file_mirror_is_refused_not_waited_on(tmp_path):
    """A file:// mirror (a share anyone can write to) with a FIFO for the manifest: opening it
    blocked the install forever."""
    host = new_host(tmp_path)
    redist = hostile_mirror.build(tmp_path / "mirror", hostile_archives.tar_bytes([]))
    manifest = redist / ("redistrib_%s.json" % hostile_mirror.RELEASE)
    manifest.unlink()
    os.mkfifo(manifest)
    line = one_error_line(host.run("install", hostile_mirror.RELEASE, "--mirror", redist.as_uri(), timeout=60))
    assert "redistrib_77.1.0.json: not a regular file" in line, line
    nothing_installed(host)


# --- the corpus ---------------------------------------------------------------------------------

def _entry(data):
    return {"relative_path": "cuda_nvcc/linux-x86_64/%s.tar.xz" % hostile_archives.TOP, "component": "cuda_nvcc",
            "size": len(data), "version": "77.1.0"}


def _links_stay_inside(tree):
    """Every link left in the tree resolves (by the kernel, through realpath) inside it."""
    root = os.path.realpath(tree)
    for directory, dirs, files in os.walk(tree):
        for name in dirs + files:
            path = os.path.join(directory, name)
            mode = os.lstat(path).st_mode
            assert not stat.S_ISFIFO(mode) and not stat.S_ISCHR(mode) and not stat.S_ISBLK(mode), path
            assert not mode & (stat.S_ISUID | stat.S_ISGID), path
            if stat.S_ISLNK(mode):
                real = os.path.realpath(path)
                assert real == root or real.startswith(root + os.sep), (path, os.readlink(path), real)


def _check_case(label, data, base, canaries):
    """Unpack one archive through the real unpack; returns 'unpacked' or 'refused'."""
    tree = base / "trees" / label / "toolkits" / ".tmp" / "unpacked" / "cuda_nvcc"  # CLIMB levels, as an install's
    archive = base / "archive.tar.xz"
    archive.write_bytes(data)
    before = hostile_mirror.snapshot(base, skip={base / "trees"})
    started = time.monotonic()
    try:
        redist_tree.unpack(str(archive), _entry(data), str(tree))
        outcome = "unpacked"
    except CudaSwitchError as exc:
        assert exc.message and "\n" not in exc.message, (label, exc.message)
        outcome = "refused"
    assert time.monotonic() - started < 10, label
    for canary, inode in canaries:
        canary_untouched(canary, inode)
    assert hostile_mirror.snapshot(base, skip={base / "trees"}) == before, label
    if outcome == "unpacked":
        _links_stay_inside(tree)
    shutil.rmtree(base / "trees" / label, ignore_errors=True)  # a header refused first leaves none
    return outcome


@pytest.fixture(scope="module")
def canary(tmp_path_factory):
    """The dir the corpus aims at by absolute paths, holding one secret file (relative paths aim
    at each test's own base/canary)."""
    canary = tmp_path_factory.mktemp("corpus") / "canary"
    canary.mkdir()
    (canary / "secret").write_text("secret\n")
    return canary


@pytest.fixture(scope="module")
def cases(canary):
    return hostile_archives.corpus(CORPUS_SEED, CORPUS_SIZE, str(canary), CLIMB)


def local_canary(base):
    (base / "canary").mkdir()
    (base / "canary" / "secret").write_text("secret\n")
    return base / "canary", os.lstat(base / "canary" / "secret").st_ino


def canary_untouched(canary, inode):
    assert sorted(os.listdir(canary)) == ["secret"], os.listdir(canary)
    secret = os.lstat(canary / "secret")
    assert (secret.st_ino, secret.st_nlink, (canary / "secret").read_text()) == (inode, 1, "secret\n")


def test_corpus_of_hostile_archives_writes_nothing_outside_the_tree(tmp_path, canary, cases):
    """320 seeded hostile archives (links out by `..`, absolute and through other links, chains,
    absolute and `..` names, hard links out, devices, FIFOs, long and deep names, duplicates, a
    link then a file through it, oversized headers, declared sizes of 50 GiB, 160 MiB of zeros)
    through the real unpack: the canary dir stays as it was, nothing appears outside the tree,
    every error is a one-line CudaSwitchError, and what is unpacked has no link out."""
    canaries = [(canary, os.lstat(canary / "secret").st_ino), local_canary(tmp_path)]
    started = time.monotonic()
    outcomes = {}
    for label, data in cases:
        outcome = _check_case(label, data, tmp_path, canaries)
        assert outcome == "refused" or label.startswith("random-"), label  # the hand-made ones all attack
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    assert sum(outcomes.values()) >= 300
    assert outcomes.get("refused", 0) > 200 and outcomes.get("unpacked", 0) > 20, outcomes
    assert time.monotonic() - started < 60, outcomes


def test_late_escape_and_many_members_are_refused(tmp_path, canary):
    """Links that are inside alone but leave together, and 12,000 empty members in a 20 KB archive
    (file creation is the slow part: the member budget stops it near 4,400)."""
    canaries = [(canary, os.lstat(canary / "secret").st_ino), local_canary(tmp_path)]
    late = hostile_archives.tar_bytes(hostile_archives.late_escape())
    assert _check_case("late", late, tmp_path, canaries) == "refused"
    top = hostile_archives.TOP
    many = hostile_archives.tar_bytes([hostile_archives.info("dir", top), hostile_archives.info("dir", top + "/m")] +
                                      [hostile_archives.info("file", "%s/m/%d" % (top, n)) for n in range(12_000)])
    assert len(many) < 100_000
    assert _check_case("many", many, tmp_path, canaries) == "refused"


@pytest.mark.parametrize("index", [0, 1, 3, 4, 5, 11, 19, 42])
def test_corpus_cases_through_the_cli(tmp_path, canary, cases, index):
    """A handful of the corpus, as the cuda_nvcc archive of a file:// mirror, through the real
    `install`: one error line, no traceback, ~/.bashrc and the canary untouched, nothing outside."""
    host = new_host(tmp_path)
    canaries = [(canary, os.lstat(canary / "secret").st_ino), local_canary(tmp_path)]
    label, data = cases[index]
    redist = hostile_mirror.build(tmp_path / "mirror", data)
    before = outside_install(host, tmp_path)
    one_error_line(host.run("install", hostile_mirror.RELEASE, "--mirror", redist.as_uri(), timeout=120))
    assert outside_install(host, tmp_path) == before, label
    for each, inode in canaries:
        canary_untouched(each, inode)
    assert (tmp_path / "home" / ".bashrc").read_text() == BASHRC
    nothing_installed(host)


def test_setuid_bits_are_dropped_and_a_benign_archive_still_unpacks(tmp_path):
    """The member checks keep what NVIDIA's archives need: files with their exec bits, dirs,
    library links, the top dir stripped, lib -> lib64, LICENSE under share/licenses/."""
    top = hostile_archives.TOP
    info = hostile_archives.info
    data = hostile_archives.tar_bytes([
        info("dir", top), info("dir", top + "/bin"), info("file", top + "/bin/nvcc", b"#!/bin/sh\n", 0o4755),
        info("dir", top + "/lib"), info("file", top + "/lib/libx.so.1", b"elf", 0o2755),
        info("sym", top + "/lib/libx.so", "libx.so.1"), info("hard", top + "/lib/libx.so.1.0", top + "/lib/libx.so.1"),
        info("file", top + "/LICENSE", b"license")])
    archive = tmp_path / "a.tar.xz"
    archive.write_bytes(data)
    tree = tmp_path / "tree"
    assert redist_tree.unpack(str(archive), _entry(data), str(tree)) == 5  # files and links, as before
    assert stat.S_IMODE((tree / "bin" / "nvcc").stat().st_mode) == 0o755
    assert stat.S_IMODE((tree / "lib64" / "libx.so.1").stat().st_mode) == 0o755
    assert os.readlink(tree / "lib64" / "libx.so") == "libx.so.1"
    assert (tree / "lib64" / "libx.so.1.0").stat().st_nlink == 2
    assert (tree / "share" / "licenses" / "cuda_nvcc" / "LICENSE").read_bytes() == b"license"
    assert Path(tree / "bin").is_dir() and not (tree / "lib").exists()


# --- headers and implicit dirs ------------------------------------------------------------------

@pytest.mark.parametrize("case", hostile_archives.HOSTILE_HEADERS)
def test_hostile_tar_headers_are_refused_before_tarfile_parses_them(tmp_path, canary, case):
    """CVE-2024-6232 and its kin against the real unpack: a pax header of digits (a 272-byte .tar.xz
    took 9.5 s here on Python 3.11.7, and a header under the old 1 MiB cap half an hour), records
    whose keyword pattern scans to a far '=', a 60,000-digit value, an 8 MiB pax path, a GNU long
    name past PATH_MAX, a chain of 2,000 pax headers (tarfile recursed into a RecursionError),
    global headers tarfile keeps for the whole archive. Each is one line, refused in seconds,
    nothing written outside the tree."""
    import lzma

    canaries = [(canary, os.lstat(canary / "secret").st_ino), local_canary(tmp_path)]
    data = lzma.compress(hostile_archives.hostile_header(case), preset=0)
    started = time.monotonic()
    assert _check_case(case, data, tmp_path, canaries) == "refused"
    assert time.monotonic() - started < 3, case


def test_benign_pax_headers_still_unpack(tmp_path):
    """What GNU tar --format=posix and Python write: a long path, sub-second mtimes, a comment,
    a global header; the checks must let them through."""
    top = hostile_archives.TOP
    long_name = top + "/include/" + "/".join(["sub%d" % n for n in range(30)]) + "/header.h"
    member, data = hostile_archives.info("file", long_name, b"#pragma once\n")
    member.pax_headers = {"mtime": "1700000000.123456789", "comment": "x" * 2000}
    raw = hostile_archives.raw_member("pax_global_header", tarfile.XGLTYPE,
                                      hostile_archives.pax_record(b"comment", b"0123456789abcdef" * 4))
    import lzma

    archive = tmp_path / "a.tar.xz"
    tarred = hostile_archives.tar_bytes([hostile_archives.info("dir", top), (member, data)], compress="tar")
    archive.write_bytes(lzma.compress(raw + tarred, preset=0))
    tree = tmp_path / "tree"
    assert redist_tree.unpack(str(archive), _entry(archive.read_bytes()), str(tree)) == 1
    assert (tree / long_name.split("/", 1)[1]).read_bytes() == b"#pragma once\n"


def test_parent_dirs_tar_makes_itself_count_against_the_member_budget(tmp_path, canary):
    """An 11 KB .tar.xz of 4,000 empty files 62 levels deep, with no dir members, made 244,000
    dirs (954 MB) because only members were counted: here 1,000 such files in a 5 KB archive
    (61,000 dirs before) are refused near the member budget, a few thousand dirs in."""
    canaries = [(canary, os.lstat(canary / "secret").st_ino), local_canary(tmp_path)]
    data = hostile_archives.dir_bomb(1000, 62)
    assert len(data) < 10_000
    archive = tmp_path / "bomb.tar.xz"
    archive.write_bytes(data)
    tree = tmp_path / "tree"
    started = time.monotonic()
    with pytest.raises(CudaSwitchError) as refused:
        redist_tree.unpack(str(archive), _entry(data), str(tree))
    assert "members for its size" in refused.value.message and "\n" not in refused.value.message
    assert time.monotonic() - started < 10
    made = sum(len(dirs) for _, dirs, _ in os.walk(tree)) if tree.exists() else 0
    assert made < 4096 + len(data) // 64 + 100, made
    for each, inode in canaries:
        canary_untouched(each, inode)
