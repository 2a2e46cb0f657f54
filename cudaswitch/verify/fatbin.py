"""The GPU code a CUDA binary carries (SASS `sm_XY`, PTX `compute_XY`), read from the fatbinaries in an
ELF file's `.nv_fatbin` / `__nv_relfatbin` sections: no CUDA, no GPU, no import; a wheel is streamed,
a library read by offsets, only headers kept, so memory stays small whatever the library's size.
Layout (as nvcc writes it): 8-byte aligned containers, each a 16-byte header (magic 0xBA55ED50,
version, header size, size) then entries (kind 1 PTX / 2 SASS, header size, payload size, arch,
flags `a`/`f`). The arch list is the code every container holds; code only some hold is `partial`:
a GPU only it fits still gets "no kernel image" from every other kernel."""

import re
import struct
import zipfile
import zlib
from collections import Counter
from pathlib import Path
from typing import IO, Dict, Iterable, List, Optional

from cudaswitch.errors import CudaSwitchError

FATBIN_MAGIC = 0xBA55ED50
SECTIONS = (".nv_fatbin", "__nv_relfatbin")
WHEEL_MEMBER = "torch/lib/libtorch_cuda.so"
KIND_PREFIX = {1: "compute_", 2: "sm_"}
FLAG_ARCH_SPECIFIC = 0x100000  # sm_90a / compute_90a
FLAG_FAMILY = 0x200000  # sm_100f / compute_120f
CONTAINER = struct.Struct("<IHHQ")
ENTRY = struct.Struct("<HHIQIIHHIIIQ")  # kind, -, header size, size, -, -, minor, major, arch, -, -, flags
SECTION = struct.Struct("<IIQQQQIIQQ")
MAX_SECTIONS = 1 << 16
MAX_NAMES = 16 << 20  # a section-name table larger than this is not a real library's
TAIL = 1 << 20  # read this much before the section headers too: the name table usually lies there
WINDOW = 4 << 20
ZERO_RUN = 1 << 20  # how much zero padding one step of the walk may skip
SHT_NOBITS = 8


class FatbinError(CudaSwitchError):
    """A file that is not a readable ELF file or holds broken fatbinaries."""


def read_path(path: "str | Path") -> dict:
    """The code in a torch wheel, an installed torch (its package dir or torch/lib), or one ELF file."""
    path = Path(path)
    if path.is_dir():
        return read_elf_file(_library_in(path))
    return read_wheel(path) if zipfile.is_zipfile(path) else read_elf_file(path)


def _library_in(directory: Path) -> Path:
    for candidate in (directory / "libtorch_cuda.so", directory / "lib" / "libtorch_cuda.so",
                      directory / WHEEL_MEMBER):
        if candidate.is_file():
            return candidate
    raise FatbinError("no libtorch_cuda.so in %s (nor in its lib/ or torch/lib/)" % directory,
                      "give a CUDA build's torch directory or its wheel")


def read_elf_file(path: "str | Path") -> dict:
    try:
        with open(path, "rb") as stream:
            size = stream.seek(0, 2)
            return dict(read_elf(stream, size, str(path)), file=str(path))
    except OSError as exc:
        raise FatbinError("cannot read %s: %s" % (path, exc.strerror or exc)) from None


def read_wheel(path: "str | Path") -> dict:
    """Stream WHEEL_MEMBER out of the wheel (never unpacked to disk) and say which torch it is."""
    try:
        with zipfile.ZipFile(path) as wheel:
            try:
                info = wheel.getinfo(WHEEL_MEMBER)
            except KeyError:
                raise FatbinError("%s has no %s: not a CUDA build of torch" % (path, WHEEL_MEMBER)) from None
            with wheel.open(info) as stream:
                found = read_elf(stream, info.file_size, "%s!%s" % (path, WHEEL_MEMBER))
            return dict(found, file=str(path), member=WHEEL_MEMBER, **_wheel_torch(wheel))
    except (OSError, zipfile.BadZipFile, EOFError, zlib.error, RuntimeError, NotImplementedError) as exc:
        # zlib.error: a damaged deflate stream; RuntimeError: an encrypted member; NotImplementedError:
        # a compression method zipfile does not know
        raise FatbinError("cannot read the wheel %s: %s" % (path, exc)) from None


def _wheel_torch(wheel: zipfile.ZipFile) -> Dict[str, Optional[str]]:
    """torch's version and CUDA version as its own torch/version.py states them."""
    try:
        text = wheel.read("torch/version.py")[:65536].decode("utf-8", "replace")
    except KeyError:
        return {"torch": None, "cuda": None}
    found = {}
    for key in ("__version__", "cuda"):
        match = re.search(r"^%s\s*(?::[^=]+)?=\s*['\"]([^'\"]{1,40})['\"]" % key, text, re.M)
        found["torch" if key == "__version__" else "cuda"] = match.group(1) if match else None
    return found


def read_elf(stream: "IO[bytes]", size: int, where: str) -> dict:
    """{"sass", "ptx", "partial", "containers", "entries", "other_kinds", "sections"} of a 64-bit
    little-endian ELF file in `stream` (seekable; a zip member seeks by reading forward)."""
    reader = _Reader(stream, size, where)
    sections = [s for s in _sections(reader) if s["name"] in SECTIONS and s["type"] != SHT_NOBITS]
    found: dict = {"arches": Counter(), "containers": 0, "with_code": 0, "entries": 0, "other_kinds": set()}
    for section in sorted(sections, key=lambda s: s["offset"]):
        _walk_section(reader, section, found)
    everywhere = [a for a, n in found["arches"].items() if n == found["with_code"]]
    return {"sass": sort_arches(a for a in everywhere if a.startswith("sm_")),
            "ptx": sort_arches(a for a in everywhere if a.startswith("compute_")),
            "partial": sort_arches(a for a in found["arches"] if a not in everywhere),
            "containers": found["containers"], "entries": found["entries"],
            "other_kinds": sorted(found["other_kinds"]), "sections": [s["name"] for s in sections]}


def arch_flags(found: dict) -> List[str]:
    """The list as torch._C._cuda_getArchFlags() writes one: SASS first, then PTX."""
    return list(found["sass"]) + list(found["ptx"])


def sort_arches(names: "Iterable[str]") -> List[str]:
    def key(name: str) -> "tuple[int, str]":
        digits = re.search(r"(\d+)([a-z]?)$", name)
        return (int(digits.group(1)), digits.group(2)) if digits else (0, name)
    return sorted(names, key=key)


class _Reader:
    """Exact reads at offsets within the file. The last read is kept with up to WINDOW bytes after it: the
    walk goes forward in small steps, and a zip member (seeking back means starting over) is read in few."""

    def __init__(self, stream: "IO[bytes]", size: int, where: str) -> None:
        self.stream, self.size, self.where = stream, size, where
        self.window_at, self.window = 0, b""

    def at(self, offset: int, length: int) -> bytes:
        if offset < 0 or length < 0 or offset + length > self.size:
            raise FatbinError("%s: a header points past the end of the file (offset %d, %d bytes)"
                              % (self.where, offset, length))
        start = offset - self.window_at
        if not (0 <= start and start + length <= len(self.window)):
            self.window_at, self.window, start = offset, self._read(offset, length), 0
        return self.window[start:start + length]

    def _read(self, offset: int, length: int) -> bytes:
        self.stream.seek(offset)
        chunks, left = [], min(self.size - offset, max(length, WINDOW))
        while left:
            chunk = self.stream.read(min(left, WINDOW))
            if not chunk:
                raise FatbinError("%s: the file ends early (offset %d)" % (self.where, offset))
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)


def _sections(reader: _Reader) -> List[dict]:
    """Every section header with its name (extended numbering of huge files included)."""
    ident = reader.at(0, min(64, reader.size))
    if ident[:4] != b"\x7fELF" or len(ident) < 64:
        raise FatbinError("%s is not an ELF file" % reader.where)
    if ident[4] != 2 or ident[5] != 1:
        raise FatbinError("%s is not a 64-bit little-endian ELF file" % reader.where)
    shoff, = struct.unpack_from("<Q", ident, 0x28)
    entsize, count, names_index = struct.unpack_from("<HHH", ident, 0x3A)
    if shoff == 0:
        raise FatbinError("%s has no section headers (stripped of them)" % reader.where)
    if entsize != SECTION.size:
        raise FatbinError("%s: section headers of %d bytes, not %d" % (reader.where, entsize, SECTION.size))
    first = SECTION.unpack(reader.at(shoff, SECTION.size))
    count = count or first[5]  # e_shnum 0: the real count is in section 0's sh_size
    names_index = first[6] if names_index == 0xFFFF else names_index
    if not 0 < count <= MAX_SECTIONS or names_index >= count:
        raise FatbinError("%s: %d section headers, name table at %d" % (reader.where, count, names_index))
    start = max(0, shoff - TAIL)
    reader.at(start, shoff + count * SECTION.size - start)  # kept: the name table is usually in it
    rows = [SECTION.unpack(reader.at(shoff + i * SECTION.size, SECTION.size)) for i in range(count)]
    table = rows[names_index]
    if table[5] > MAX_NAMES:
        raise FatbinError("%s: a section-name table of %d bytes" % (reader.where, table[5]))
    names = reader.at(table[4], table[5])
    return [{"name": _name(names, row[0]), "type": row[1], "offset": row[4], "size": row[5]} for row in rows]


def _name(table: bytes, offset: int) -> str:
    end = table.find(b"\0", offset)
    return table[offset:end if end >= 0 else len(table)].decode("ascii", "replace") if offset < len(table) else ""


def _walk_section(reader: _Reader, section: dict, found: dict) -> None:
    """Container after container; zero padding between them is skipped 8 bytes at a time."""
    pos, end = section["offset"], section["offset"] + section["size"]
    while pos + CONTAINER.size <= end:
        magic, _version, header_size, body = CONTAINER.unpack(reader.at(pos, CONTAINER.size))
        if magic != FATBIN_MAGIC:
            # skip a whole run of zero padding at once (8 bytes a step took seconds per 64 MiB)
            chunk = reader.at(pos, min(ZERO_RUN, end - pos))
            zeros = len(chunk) - len(chunk.lstrip(b"\0"))
            if zeros < 8:
                raise FatbinError("%s: %s holds something other than a fatbinary at offset %d"
                                  % (reader.where, section["name"], pos))
            pos += zeros - zeros % 8
            continue
        if header_size < CONTAINER.size or pos + header_size + body > end:
            raise FatbinError("%s: a fatbinary at offset %d runs past its section" % (reader.where, pos))
        arches = _walk_entries(reader, pos + header_size, pos + header_size + body, found)
        found["arches"].update(arches)
        found["containers"] += 1
        found["with_code"] += bool(arches)
        pos += header_size + body


def _walk_entries(reader: _Reader, pos: int, end: int, found: dict) -> set:
    """The arch names of one container's entries."""
    arches = set()
    while pos + ENTRY.size <= end:
        kind, _, header_size, size, _, _, _, _, arch, _, _, flags = ENTRY.unpack(reader.at(pos, ENTRY.size))
        if header_size < ENTRY.size or pos + header_size + size > end:
            raise FatbinError("%s: a fatbinary entry at offset %d runs past its container" % (reader.where, pos))
        found["entries"] += 1
        if kind in KIND_PREFIX:
            suffix = "a" if flags & FLAG_ARCH_SPECIFIC else "f" if flags & FLAG_FAMILY else ""
            arches.add("%s%d%s" % (KIND_PREFIX[kind], arch, suffix))
        else:
            found["other_kinds"].add(kind)
        pos += header_size + size
    return arches
