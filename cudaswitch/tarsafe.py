"""Tar headers that tarfile may parse only once they are bounded and well formed.

tarfile reads a pax or GNU long-name header whole, and before Python 3.11.10 / 3.12.6 its pax
parser is quadratic (a 1 MiB header of digits took half an hour). So each is checked first, in
one linear pass: a pax header is at most MAX_EXTENDED bytes of "LEN KEY=VALUE\\n" records that
tile it exactly, with no run of over MAX_DIGIT_RUN digits (the quadratic search restarts at each
digit of a run), and no GNU sparse records; a GNU long name or link, and every member's name and
link, is at most MAX_NAME bytes; at most MAX_CHAIN extended headers precede a member (tarfile
recurses per header); global ones hold MAX_EXTENDED bytes in all (tarfile keeps them for the
whole archive), and all of an archive's MAX_TOTAL. Real archives stay far below.
"""

import re
import tarfile

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_EXTENDED = 64 << 10
MAX_NAME = 4096  # PATH_MAX
MAX_DIGIT_RUN = 64
MAX_CHAIN = 8
MAX_TOTAL = 512 << 20
MAX_LENGTH_DIGITS = 10
PAX_TYPES = (tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE)
LONG_NAME_TYPES = (tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK)
DIGITS = frozenset(b"0123456789")
LONG_DIGIT_RUN = re.compile(rb"[0-9]{%d}" % (MAX_DIGIT_RUN + 1))  # linear: each try stops within the bound


class HeaderRefused(Exception):
    """A tar header that is not handed to tarfile's parser; the message is one line."""


def check_pax_records(buf: bytes, size: int) -> None:
    """`buf` (the header's `size` bytes and their block padding) as tarfile's parser will read it:
    records tiling buf[:size] exactly, each "LEN KEY=VALUE\\n"; HeaderRefused otherwise."""
    if LONG_DIGIT_RUN.search(buf):
        raise HeaderRefused("a pax header with a run of more than %d digits; refused" % MAX_DIGIT_RUN)
    pos = 0
    while pos < size:
        space = buf.find(b" ", pos, min(size, pos + MAX_LENGTH_DIGITS + 1))
        digits = buf[pos:space] if space > pos else b""
        if not digits or not all(b in DIGITS for b in digits) or int(digits) <= len(digits) + 1:
            raise HeaderRefused("a pax header record at byte %d has no valid length; refused" % pos)
        end = pos + int(digits)
        equals = buf.find(b"=", space + 1, end)
        if end > size or buf[end - 1:end] != b"\n" or equals <= space + 1:
            raise HeaderRefused("a pax header record at byte %d is malformed; refused" % pos)
        if buf[space + 1:equals].startswith(b"GNU.sparse."):
            raise HeaderRefused("a pax header describes a sparse file; refused")
        pos = end
    if size < len(buf) and buf[size] in DIGITS:  # tarfile goes on matching records in the padding
        raise HeaderRefused("a pax header's padding starts another record; refused")


class _Replay:
    """The archive's stream with the bytes already read for a check served again first."""

    def __init__(self, head: bytes, stream: "Any") -> None:
        self.head, self.stream = head, stream

    def read(self, count: "int | None" = -1) -> bytes:
        if not self.head:
            return self.stream.read(count)
        if count is None or count < 0 or count >= len(self.head):
            data, self.head = self.head, b""
            rest = self.stream.read(-1 if count is None or count < 0 else count - len(data))
            return data + rest
        data, self.head = self.head[:count], self.head[count:]
        return data

    def tell(self) -> int:
        return self.stream.tell() - len(self.head)

    def __getattr__(self, name: str) -> "Any":
        return getattr(self.stream, name)


class BoundedInfo(tarfile.TarInfo):
    """A TarInfo whose extended headers are checked before tarfile parses them; raises `error`."""

    error: "type[Exception]" = HeaderRefused

    def _proc_member(self, tarfile_: "Any") -> "tarfile.TarInfo":
        if self.type not in PAX_TYPES + LONG_NAME_TYPES:
            return self._checked_names(super()._proc_member(tarfile_))  # type: ignore[misc]
        chain = getattr(tarfile_, "_bounded_chain", 0) + 1
        if chain > MAX_CHAIN:
            raise self.error("more than %d extended tar headers before one member; refused" % MAX_CHAIN)
        self._charge(tarfile_)
        stream = tarfile_.fileobj
        tarfile_._bounded_chain = chain
        try:
            if self.type in PAX_TYPES:
                buf = stream.read(self._block(self.size))  # type: ignore[attr-defined]
                try:
                    check_pax_records(buf, self.size)
                except HeaderRefused as exc:
                    raise self.error(str(exc)) from None
                tarfile_.fileobj = _Replay(buf, stream)
            return self._checked_names(super()._proc_member(tarfile_))  # type: ignore[misc]
        finally:
            tarfile_.fileobj = stream
            tarfile_._bounded_chain = chain - 1

    def _charge(self, tarfile_: "Any") -> None:
        """Refuses the header before it is read when it, or the archive's headers, are too large."""
        if self.type in LONG_NAME_TYPES and self.size > MAX_NAME + 1:
            what = "name" if self.type == tarfile.GNUTYPE_LONGNAME else "link target"
            raise self.error("a GNU long %s of %d bytes (more than %d); refused" % (what, self.size, MAX_NAME))
        if self.size > MAX_EXTENDED:
            raise self.error("a pax header of %d bytes (more than %d); refused" % (self.size, MAX_EXTENDED))
        total = getattr(tarfile_, "_bounded_total", 0) + self.size
        tarfile_._bounded_total = total
        if total > MAX_TOTAL:
            raise self.error("the archive's extended headers exceed %d MiB; refused" % (MAX_TOTAL >> 20))
        if self.type == tarfile.XGLTYPE:
            tarfile_._bounded_global = getattr(tarfile_, "_bounded_global", 0) + self.size
            if tarfile_._bounded_global > MAX_EXTENDED:
                raise self.error("the archive's global pax headers exceed %d bytes; refused" % MAX_EXTENDED)

    def _checked_names(self, member: "tarfile.TarInfo") -> "tarfile.TarInfo":
        for what, text in (("name", member.name), ("link target", member.linkname)):
            size = len(text.encode("utf-8", "surrogateescape")) if len(text) > MAX_NAME // 4 else 0
            if size > MAX_NAME:
                raise self.error("a member %s of %d bytes (more than %d); refused" % (what, size, MAX_NAME))
        return member
