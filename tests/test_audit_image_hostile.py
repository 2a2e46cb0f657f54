"""Hostile images: `audit --image` on layouts a stranger made to write outside the audit's private
view or to exhaust it. Each mirrors a known attack on image unpackers: tar members with `..` or an
absolute name (CVE-2019-14271-style path traversal), a symlink followed by a member written through
it, a link pointing above the root, a device node, a version file claiming 1 GiB, a gzip bomb,
a blob whose bytes do not match its digest, a missing blob, a truncated layer; and headers that
tarfile's own parser chokes on (CVE-2024-6232's quadratic pax parsing, a 200 MiB pax path kept as a
name, chains of headers), a name too long for the host's NAME_MAX and a link whose rewritten target
passes PATH_MAX. Each must be one line on stderr, exit 1, nothing on stdout, nothing written outside
the temp dir, which is removed."""

import gzip
import io
import tarfile
import time
import zlib

import pytest

from tests import hostile_archives
from tests import image_support as images

CANARY = "cudaswitch-canary"


def tar_of(*members):
    """A layer tar from TarInfo-ready tuples: (name, type, data or linkname)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name, kind, value in members:
            info = tarfile.TarInfo(name)
            info.type, info.mode = kind, 0o644
            if kind in (tarfile.SYMTYPE, tarfile.LNKTYPE):
                info.linkname = value
                tar.addfile(info)
            elif kind == tarfile.CHRTYPE:
                info.devmajor, info.devminor = 1, 3
                tar.addfile(info)
            else:
                info.size = len(value)
                tar.addfile(info, io.BytesIO(value))
    return out.getvalue()


def huge_header_layer():
    """A version.json whose header claims 1 GiB (the data never follows: it is refused at the header)."""
    info = tarfile.TarInfo("usr/local/cuda-12.4/version.json")
    info.size = 1 << 30
    return info.tobuf(format=tarfile.GNU_FORMAT) + b"\0" * 4096


def gzip_bomb():
    """1 GiB of zeros in one file, gzip-compressed to about 1 MiB."""
    info = tarfile.TarInfo("opt/zeros.bin")
    info.size = 1 << 30
    deflate = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    parts = [deflate.compress(info.tobuf(format=tarfile.GNU_FORMAT))]
    zeros = b"\0" * (1 << 20)
    for _ in range(1024):
        parts.append(deflate.compress(zeros))
    parts.append(deflate.compress(b"\0" * 1024) + deflate.flush())
    return b"".join(parts)


LAYERS = {
    "dotdot": [tar_of(("../../%s/evil" % CANARY, tarfile.REGTYPE, b"x"))],
    "absolute": [tar_of(("/tmp/%s/evil" % CANARY, tarfile.REGTYPE, b"x"))],
    "write-through-link": [tar_of(("usr/local/cuda", tarfile.SYMTYPE, "/"),
                                  ("usr/local/cuda/%s/evil" % CANARY, tarfile.REGTYPE, b"x"))],
    "link-chain-across-layers": [tar_of(("a", tarfile.SYMTYPE, "/tmp")),
                                 tar_of(("a/%s" % CANARY, tarfile.REGTYPE, b"x"))],
    "link-above-root": [tar_of(("usr/local/cuda", tarfile.SYMTYPE, "../../../../../../" + CANARY))],
    "hardlink-out": [tar_of(("evil", tarfile.LNKTYPE, "../../etc/passwd"))],
    "device": [tar_of(("dev/null", tarfile.CHRTYPE, None))],
    "huge-version-json": [huge_header_layer()],
    "gzip-bomb": [gzip_bomb()],
    "not-a-tar": [gzip.compress(b"this is not a tar archive " * 100)],
}
EXPECTED = {
    "dotdot": "climbs out", "absolute": "absolute name", "write-through-link": "written through the link",
    "link-chain-across-layers": "written through the link", "link-above-root": "leaves the image",
    "hardlink-out": "climbs out", "device": "device", "huge-version-json": "more than such a file holds",
    "gzip-bomb": "compression bomb", "not-a-tar": "not a readable tar",
    "bad-digest": "does not match its digest", "missing-blob": "has no blobs/sha256", "truncated": "truncated",
}


def _tamper(case):
    def change(stored):
        layer = next(d for d, data in stored.items() if data.startswith(b"usr/"))
        if case == "bad-digest":
            stored[layer] = stored[layer].replace(b"12.4", b"99.9")
        elif case == "missing-blob":
            del stored[layer]
        else:
            stored[layer] = stored[layer][: len(stored[layer]) // 2]
    return change


def layout_for(case, where):
    if case in LAYERS:
        return images.write_layout(where, LAYERS[case])
    good = tar_of(("usr/local/cuda-12.4/version.txt", tarfile.REGTYPE, b"CUDA Version 12.4.1\n" * 64))
    return images.write_layout(where, [good], tamper=_tamper(case))


HEADER_EXPECTED = {
    "digits-60k": "run of more than 64 digits", "digits-80k": "more than 65536", "keyword-scan": "malformed",
    "digit-run-value": "run of more than 64 digits", "pax-path-8MiB": "more than 65536",
    "gnu-longname-5000": "GNU long name of", "pax-chain-2000": "extended tar headers",
    "global-headers": "global pax headers",
}
TOO_LONG_FOR_THE_HOST = {
    # a directory kept in the view (a toolkit root's place) named past NAME_MAX: mkdir failed
    "name-over-255": [tar_of(("usr/local/" + "a" * 300, tarfile.DIRTYPE, b""))],
    # a toolkit-root link 100 levels down to a 3.8 KB absolute path: rewritten relative, its
    # target passes PATH_MAX and symlink failed
    "link-text-over-path-max": [tar_of(("/".join(["x"] * 100 + ["cuda"]), tarfile.SYMTYPE,
                                        "/" + "/".join(["y" * 30] * 123)))],
    # a 25,000-part link target (50 KB): refused as a name before it reaches the view
    "link-25000-parts": [tar_of(("usr/local/cuda", tarfile.SYMTYPE, "x/" * 25_000))],
}
LONG_EXPECTED = {"name-over-255": "longer than 255 bytes", "link-text-over-path-max": "target longer than 4095",
                 "link-25000-parts": "link target of 50001 bytes (more than 4096)"}


def header_layer(case):
    raw = hostile_archives.hostile_header(case)
    return gzip.compress(raw, 6) if case == "pax-path-8MiB" else raw  # as the 204 KB gzip layer was


def snapshot(directory):
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*"))


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_hostile_image_is_one_line_and_writes_nothing(host, tmp_path, case):
    refused_in_one_line(host, tmp_path, layout_for(case, tmp_path / "layouts" / "img"), EXPECTED[case], case)


@pytest.mark.parametrize("case", sorted(HEADER_EXPECTED))
def test_hostile_tar_header_in_a_layer_is_refused_in_seconds(host, tmp_path, case):
    """The layer's headers go through the same checks as a redist archive's before tarfile parses
    them: a pax header of 80,000 digits took 11.6 s of CPU, a 204 KB gzip layer with a 200 MiB pax
    path 653 MB of memory (six of them 1.67 GB), a chain of 2,000 headers a RecursionError."""
    ref = images.write_layout(tmp_path / "layouts" / "img", [header_layer(case)])
    started = time.monotonic()
    refused_in_one_line(host, tmp_path, ref, HEADER_EXPECTED[case], case)
    assert time.monotonic() - started < 15, case  # the CLI's own start included; the parse is instant


@pytest.mark.parametrize("case", sorted(TOO_LONG_FOR_THE_HOST))
def test_names_too_long_for_the_host_are_one_line_not_a_traceback(host, tmp_path, case):
    """Names the image may hold but the host cannot lay out (ENAMETOOLONG from mkdir or symlink
    was a traceback): refused with one line before the view is written."""
    ref = images.write_layout(tmp_path / "layouts" / "img", TOO_LONG_FOR_THE_HOST[case])
    refused_in_one_line(host, tmp_path, ref, LONG_EXPECTED[case], case)


def refused_in_one_line(host, tmp_path, ref, expected, case):
    canary = tmp_path / "canary" / "a" / "b"  # the view lives two levels down: '../..' lands in canary/
    temp = canary / "tmp"
    temp.mkdir(parents=True)
    before = snapshot(tmp_path)
    proc = host.run("audit", "--image", ref, "--driver", "550.54.15", "--no-progress",
                    env={"TMPDIR": str(temp)}, timeout=120)
    assert proc.returncode == 1, (case, proc.returncode, proc.stderr)
    assert proc.stdout == "" and "Traceback" not in proc.stderr, proc.stderr
    [line] = proc.stderr.splitlines()
    assert line.startswith("cudaswitch: error: ") and expected in line, (case, line)
    assert snapshot(tmp_path) == before, case  # no evil file anywhere, and the temp dir is gone
    assert not list((tmp_path / "canary").rglob("*" + CANARY + "*"))
