"""Tar members written into a tree by our own checks, never by tarfile's extraction filters, whose
protection depends on the Python patch release (a chain of links longer than PATH_MAX fools the
`data` filter's realpath() before 3.11.13 / 3.12.11 / 3.13.4). Each rule alone keeps writes inside:
- members are written relative to a dir fd opened component by component with O_NOFOLLOW, and a
  parent path through a link or a file is refused: no write follows a link;
- files are created O_EXCL | O_NOFOLLOW, and a name seen twice is refused (it could retarget a
  link checked earlier);
- a symlink's target is resolved as the kernel would, through the archive's own links (nothing on
  disk is asked), and refused when it leaves the tree, is absolute or needs over 40 links; every
  link is checked again once the archive is done;
- a hard link may only name a regular file this archive wrote; devices, FIFOs and other types are
  refused; setuid, setgid, sticky and group/other write bits are dropped;
- bytes streamed, bytes written and members made (a parent dir made without a member counts too)
  are bounded by a budget from the archive's size (a ratio, a floor, a cap): an archive of zeros
  or of empty files is refused in seconds instead of filling the disk;
- pax and GNU long-name headers are bounded and checked before tarfile parses them (tarsafe.py).
"""

import bz2
import gzip
import io
import lzma
import os
import shutil
import tarfile
from collections import OrderedDict
from collections.abc import Callable
from tarfile import TarFile, TarInfo
from typing import IO, Any

from cudaswitch import tarsafe
from cudaswitch.errors import CudaSwitchError

Parts = tuple[str, ...]
Links = dict[Parts, str]

MAX_LINK_HOPS = 40  # the kernel's own limit on links followed in one path lookup
MAX_RESOLVE_STEPS = 2_000_000  # path components walked for all the links of one archive
MAX_DEPTH = 64
MAX_PATH = 1024  # bytes of a member's path or a link's target inside the tree
MAX_MEMBERS = 500_000
MEMBERS_FLOOR, BYTES_PER_MEMBER = 4096, 64  # NVIDIA's archives hold hundreds of compressed bytes per member
UNPACK_RATIO = 40
UNPACK_FLOOR = 128 << 20
UNPACK_CAP = 32 << 30
MEMBER_COST = 4096  # each member written costs at least a block (and an inode), even when empty
XZ_MEMLIMIT = 256 << 20  # xz -9 needs 65 MiB to decode; a forged header may ask for 1.5 GiB
CHUNK = 1 << 20
FD_CACHE = 16
OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
CREATE_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
HINT = "the mirror is corrupt or tampered with; nothing was installed"


class Refused(CudaSwitchError):
    """An archive member, or the archive as a whole, that is not written."""

    def __init__(self, message: str) -> None:
        super().__init__(message, HINT)


def shown(text: str, limit: int = 80) -> str:
    """A member name or link target for an error line: escaped, and short."""
    return repr(text[:limit]) + ("..." if len(text) > limit else "")


class Budget:
    """Bytes streamed (headers included) and bytes written, each bounded by `limit`; members made."""

    def __init__(self, archive_bytes: int) -> None:
        archive_bytes = max(0, archive_bytes)
        self.limit = min(UNPACK_CAP, UNPACK_FLOOR + UNPACK_RATIO * archive_bytes)
        self.most_members = min(MAX_MEMBERS, MEMBERS_FLOOR + archive_bytes // BYTES_PER_MEMBER)
        self.streamed = self.written = self.members = 0

    def _over(self) -> Refused:
        return Refused("it unpacks to more than %d MiB (%d times its size plus %d MiB at most); refused" % (
            self.limit >> 20, UNPACK_RATIO, UNPACK_FLOOR >> 20))

    def stream(self, count: int) -> None:
        self.streamed += count
        if self.streamed > self.limit:
            raise self._over()

    def write(self, count: int) -> None:
        self.written += count
        if self.written > self.limit:
            raise self._over()

    def member(self) -> None:
        self.write(MEMBER_COST)
        self.members += 1
        if self.members > self.most_members:  # a member costs a file creation: the slow part of a bomb
            raise Refused("it has more than %d members for its size; refused" % self.most_members)


class _XzReader(io.RawIOBase):
    """xz decompression with a memory limit (lzma.open has none), concatenated streams too."""

    def __init__(self, raw: "IO[bytes]") -> None:
        self.raw = raw
        self.engine = lzma.LZMADecompressor(lzma.FORMAT_XZ, memlimit=XZ_MEMLIMIT)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: "Any") -> int:
        while True:
            if self.engine.eof:
                rest = self.engine.unused_data or self.raw.read(CHUNK)
                if not rest:
                    return 0
                self.engine = lzma.LZMADecompressor(lzma.FORMAT_XZ, memlimit=XZ_MEMLIMIT)
            elif self.engine.needs_input:
                rest = self.raw.read(CHUNK)
                if not rest:
                    raise EOFError("compressed data ends before the end of its stream")
            else:
                rest = b""
            data = self.engine.decompress(rest, len(buffer))
            if data:
                buffer[: len(data)] = data
                return len(data)


class _Counted(io.RawIOBase):
    """The decompressed tar stream, charging every byte tarfile reads to the budget."""

    def __init__(self, source: "io.RawIOBase | io.BufferedIOBase", budget: Budget) -> None:
        self.source, self.budget = source, budget

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: "Any") -> "int | None":
        count = self.source.readinto(buffer)
        self.budget.stream(count or 0)
        return count


DECOMPRESSORS: "dict[bytes, Callable[[Any], io.RawIOBase | io.BufferedIOBase]]" = {
    b"\xfd7zXZ\x00": _XzReader, b"\x1f\x8b": lambda handle: gzip.GzipFile(fileobj=handle, mode="rb"),
    b"BZh": lambda handle: bz2.BZ2File(handle, "rb")}


def open_stream(handle: "io.BufferedReader", budget: Budget) -> io.BufferedReader:
    """The archive's tar stream (xz, gzip, bzip2 or plain, told by its first bytes), counted."""
    magic = handle.read(6)
    handle.seek(0)
    source = next((open_(handle) for start, open_ in DECOMPRESSORS.items() if magic.startswith(start)), handle)
    return io.BufferedReader(_Counted(source, budget), CHUNK)


class BoundedInfo(tarsafe.BoundedInfo):
    error = Refused


def resolves_inside(links: "Links", where: "Parts", target: str, steps: "list[int]") -> bool:
    """Whether the link at `where` pointing at `target` ends inside the tree, following the tree's
    own `links` as the kernel would (`..` climbs from where the path really is). `steps` is a
    one-item list counting components walked."""
    if not target or target.startswith("/") or len(target) > MAX_PATH:
        return False
    position = list(where[:-1])
    pending = target.split("/")[::-1]  # a stack: the next component is last
    hops = 0
    while pending:
        steps[0] += 1
        if steps[0] > MAX_RESOLVE_STEPS:
            raise Refused("the archive's links take more than %d steps to resolve; refused" % MAX_RESOLVE_STEPS)
        part = pending.pop()
        if part in ("", "."):
            continue
        if part == "..":
            if not position:
                return False
            position.pop()
            continue
        position.append(part)
        linked = links.get(tuple(position))
        if linked is None:
            continue
        hops += 1
        if hops > MAX_LINK_HOPS or not linked or linked.startswith("/"):
            return False
        position.pop()
        pending.extend(linked.split("/")[::-1])
    return True


def check_parts(parts: "Parts", name: str) -> None:
    """A member's path inside the tree: plain names only, bounded in depth and length."""
    if not parts or any(p in ("", ".", "..") or "\0" in p for p in parts):
        raise Refused("archive member %s is not a plain path inside the tree; refused" % shown(name))
    if len(parts) > MAX_DEPTH or sum(len(p.encode("utf-8", "surrogateescape")) + 1 for p in parts) > MAX_PATH:
        raise Refused("archive member %s is deeper or longer than %d levels / %d bytes; refused" % (
            shown(name), MAX_DEPTH, MAX_PATH))


class TreeWriter:
    """Writes members into `root` (made if missing); use as a context manager, then check_all_links."""

    def __init__(self, root: str, budget: Budget) -> None:
        os.makedirs(root, exist_ok=True)
        self.budget = budget
        self.root_fd = os.open(root, OPEN_DIR)
        self.kinds: "dict[Parts, str]" = {(): "dir"}  # tuple of names -> "dir" | "file" | "link"
        self.links: "Links" = {}
        self.fds: "OrderedDict[Parts, int]" = OrderedDict()  # a few open parent dirs (often revisited)
        self.steps = [0]

    def __enter__(self) -> "TreeWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        for fd in self.fds.values():
            os.close(fd)
        self.fds.clear()
        os.close(self.root_fd)

    def add(self, member: "TarInfo", parts: "Parts", link_parts: "Parts | None", source: "TarFile") -> bool:
        """Write one member at `parts`; returns True when it made a file or a link."""
        check_parts(parts, member.name)
        self.budget.member()
        kind = self.kinds.get(parts)
        if member.isdir():
            if kind not in (None, "dir"):
                raise Refused("archive member %s is a directory and a %s" % (shown(member.name), kind))
            if kind is None:
                self._make_dir(self._parent_fd(parts, member.name), parts)
            return False
        if kind is not None:
            raise Refused("archive member %s appears twice; refused" % shown(member.name))
        parent = self._parent_fd(parts, member.name)
        if member.issym():
            self._symlink(member, parts, parent)
        elif member.islnk():
            self._hardlink(member, parts, parent, link_parts)
        elif member.isreg():
            self._file(member, parts, parent, source)
        else:
            raise Refused("archive member %s is a %s; refused" % (
                shown(member.name), KIND_NAMES.get(member.type, "member of type %r" % member.type)))
        return True

    def _parent_fd(self, parts: "Parts", name: str) -> int:
        """The fd of the member's parent dir, making missing dirs; refuses a path through a link."""
        parent = parts[:-1]
        if parent in self.fds:
            self.fds.move_to_end(parent)
            return self.fds[parent]
        fd, opened = self.root_fd, []
        try:
            for depth in range(1, len(parent) + 1):
                prefix = parent[:depth]
                kind = self.kinds.get(prefix)
                if kind is None:  # a dir tar makes without a member of its own: it costs one too
                    self.budget.member()
                    self._make_dir(fd, prefix)
                elif kind != "dir":
                    raise Refused("archive member %s passes through a %s (%s); refused" % (
                        shown(name), kind, shown("/".join(prefix))))
                fd = os.open(prefix[-1], OPEN_DIR, dir_fd=fd)
                opened.append(fd)
        except BaseException:
            for each in opened:
                os.close(each)
            raise
        for each in opened[:-1]:  # only the parent itself is kept open
            os.close(each)
        if opened:
            self.fds[parent] = fd
            if len(self.fds) > FD_CACHE:
                os.close(self.fds.popitem(last=False)[1])
        return fd

    def _make_dir(self, parent_fd: int, parts: "Parts") -> None:
        os.mkdir(parts[-1], 0o755, dir_fd=parent_fd)
        self.kinds[parts] = "dir"

    def _symlink(self, member: "TarInfo", parts: "Parts", parent_fd: int) -> None:
        target = member.linkname
        if not resolves_inside(self.links, parts, target, self.steps):
            raise Refused("archive member %s is a link to %s, which leaves the tree; refused" % (
                shown(member.name), shown(target)))
        os.symlink(target, parts[-1], dir_fd=parent_fd)
        self.kinds[parts], self.links[parts] = "link", target

    def _hardlink(self, member: "TarInfo", parts: "Parts", parent_fd: int, link_parts: "Parts | None") -> None:
        if not link_parts or self.kinds.get(tuple(link_parts)) != "file":
            raise Refused("archive member %s is a hard link to %s, which is no file of the archive; refused" % (
                shown(member.name), shown(member.linkname)))
        link_parts = tuple(link_parts)
        source_fd = self._parent_fd(link_parts, member.linkname)
        os.link(link_parts[-1], parts[-1], src_dir_fd=source_fd, dst_dir_fd=parent_fd, follow_symlinks=False)
        self.kinds[parts] = "file"

    def _file(self, member: "TarInfo", parts: "Parts", parent_fd: int, source: "TarFile") -> None:
        self.budget.write(member.size)  # before anything is written: a bomb is refused at once
        fd = os.open(parts[-1], CREATE_FILE, 0o600, dir_fd=parent_fd)
        self.kinds[parts] = "file"
        with os.fdopen(fd, "wb") as sink:
            shutil.copyfileobj(source.extractfile(member), sink, CHUNK)  # type: ignore[arg-type]
            os.fchmod(sink.fileno(), (member.mode & 0o755) | 0o600)  # no setuid/setgid/sticky, no g/o write
            if 0 <= member.mtime < 1 << 33:
                os.utime(sink.fileno(), (member.mtime, member.mtime))

KIND_NAMES = {tarfile.CHRTYPE: "device", tarfile.BLKTYPE: "device", tarfile.FIFOTYPE: "FIFO"}


def check_tree_links(root: str) -> None:
    """Every link in a finished tree on disk (several archives merged) resolves inside it."""
    links: "Links" = {}
    pending: "list[tuple[Parts, str]]" = [((), root)]
    while pending:
        prefix, path = pending.pop()
        with os.scandir(path) as entries:
            for entry in entries:
                parts = prefix + (entry.name,)
                if entry.is_symlink():
                    links[parts] = os.readlink(entry.path)
                elif entry.is_dir(follow_symlinks=False):
                    pending.append((parts, entry.path))
    check_all_links(links, "link %s -> %s leaves the toolkit tree through another archive's links; refused")


def check_all_links(links: "Links", message: str, steps: "list[int] | None" = None) -> None:
    """Every link of `links` resolves inside the tree; Refused with `message` % (link, target)."""
    steps = [0] if steps is None else steps
    for parts, target in links.items():
        if not resolves_inside(links, parts, target, steps):
            raise Refused(message % (shown("/".join(parts)), shown(target)))
