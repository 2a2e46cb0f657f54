"""The dynamic section of an ELF shared object, as the loader reads it: DT_NEEDED, DT_SONAME,
DT_RPATH and DT_RUNPATH. Stdlib only, reading a few headers, never the whole (often 500 MB) file.
64-bit little-endian objects only (x86_64, aarch64: every host CUDA runs on); anything else is None."""

import struct

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from typing import BinaryIO

DT_NEEDED, DT_STRTAB, DT_SONAME, DT_RPATH, DT_RUNPATH = 1, 5, 14, 15, 29
PT_LOAD, PT_DYNAMIC = 1, 2
MAX_DYNAMIC = 64 * 1024  # a dynamic section is a few hundred entries
MAX_STRING = 4096


def dynamic(path: str) -> "dict | None":
    """{"needed": [...], "soname": str|None, "rpath": [...], "runpath": [...]}, or None for a file
    that is not a readable 64-bit little-endian ELF object."""
    try:
        with open(path, "rb") as handle:
            header = handle.read(64)
            if header[:4] != b"\x7fELF" or header[4] != 2 or header[5] != 1:
                return None
            phoff, = struct.unpack_from("<Q", header, 32)
            phentsize, phnum = struct.unpack_from("<HH", header, 54)
            handle.seek(phoff)
            table = handle.read(phentsize * phnum)
            segments = [struct.unpack_from("<IIQQQQ", table, i * phentsize) for i in range(phnum)]
            return _entries(handle, segments)
    except (OSError, struct.error):
        return None


def _entries(handle: "BinaryIO", segments: list) -> dict:
    dyn = [s for s in segments if s[0] == PT_DYNAMIC]
    if not dyn:
        return {"needed": [], "soname": None, "rpath": [], "runpath": []}
    handle.seek(dyn[0][2])
    raw = handle.read(min(dyn[0][5], MAX_DYNAMIC))
    tags = [struct.unpack_from("<qQ", raw, i) for i in range(0, len(raw) - 15, 16)]
    strtab = next((value for tag, value in tags if tag == DT_STRTAB), None)
    # DT_STRTAB is an address: the PT_LOAD segment holding it says where that is in the file.
    load = [s for s in segments if s[0] == PT_LOAD and strtab is not None and s[3] <= strtab < s[3] + s[5]]
    base = load[0][2] + strtab - load[0][3] if load else None

    def text(offset: int) -> str:
        if base is None:
            return ""
        handle.seek(base + offset)
        return handle.read(MAX_STRING).split(b"\0", 1)[0].decode("utf-8", "replace")

    strings = {tag: [text(v) for t, v in tags if t == tag] for tag in (DT_NEEDED, DT_SONAME, DT_RPATH, DT_RUNPATH)}
    return {"needed": strings[DT_NEEDED], "soname": strings[DT_SONAME][0] if strings[DT_SONAME] else None,
            "rpath": [d for s in strings[DT_RPATH] for d in s.split(":") if d],
            "runpath": [d for s in strings[DT_RUNPATH] for d in s.split(":") if d]}
