"""A candidate toolkit found on the host. Records travel through the registry cache as plain dicts:
the fast path unmarshals them and must not import dataclasses (~10 ms). `Toolkit` is a frozen view
over one record; a record is made by new_record() only; ToolkitRecord is its type for the checker."""

# typing is not imported at run time (the fast path): the checker reads this block, Python skips it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import TypedDict

    Env = Mapping[str, str]  # an environment as os.environ or a switched copy of it

    class ToolkitRecord(TypedDict):
        version: str | None       # None: nothing on disk says (a broken or unreadable root)
        root: str                 # as found (under the root prefix), what the user sees
        real: str                 # its real path, the registry's identity; "dangling:ROOT" for a dead link
        sources: list[str]        # every source that found it, in source order
        origins: dict[str, str]   # source -> where that source saw it (a path, a module, an env)
        nvcc: str | None
        status: str               # one of STATUSES
        problems: list[str]
        bin_dirs: list[str]
        lib_dirs: list[str]
        env_bin: list[str] | None  # the view dirs a switch puts on the paths instead (isolated toolkits)
        env_lib: list[str] | None
        isolated: bool            # inside a conda or Python env: switched through a view
        components: dict[str, str]  # version.json entries and libcudart's soname
        layout: str
        missing: list[str]        # compile parts absent
        outside_root: bool        # a link leaves the audited root: nothing of it was read

    # What a function that reads records takes: most callers still hold records typed as `dict`.
    AnyRecord = ToolkitRecord | dict

STATUSES = ("ok", "incomplete", "broken")
# The programs a toolkit's bin dir may hold: what a conda view links and a switch never leaves
# reachable from another toolkit (switch/standins.py).
CUDA_TOOLS = (
    "nvcc", "ptxas", "nvlink", "fatbinary", "cudafe++", "bin2c", "cuobjdump", "nvdisasm", "nvprune",
    "cu++filt", "cuda-gdb", "compute-sanitizer", "nvprof", "ncu", "nsys", "__nvcc_device_query",
)

# Keys of the public JSON shape of `list --json` (stable; see the README); other record keys are internal.
PUBLIC_KEYS = ("version", "short", "root", "sources", "nvcc", "status", "problems")
# `components` has these keys in every JSON output (list, verify, doctor, audit): version or null.
COMPONENTS = ("cudart", "nvcc", "cudnn", "nccl", "cupti", "cublas")
# version.json keys per component
VERSION_JSON_KEYS = {"cudart": "cuda_cudart", "nvcc": "cuda_nvcc", "cupti": "cuda_cupti", "cublas": "libcublas"}


_PARSED: "dict[str, tuple[int, ...]]" = {}  # torch's plan sorts and compares ~50 builds: ~1,000 calls


def version_tuple(text: "str | None") -> "tuple[int, ...]":
    """'12.4.131' -> (12, 4, 131); anything unparsable -> () so it sorts lowest."""
    known = _PARSED.get(text) if isinstance(text, str) else None
    if known is not None:
        return known
    out = []
    for piece in (text or "").split("."):
        if not (piece.isascii() and piece.isdigit()) or len(piece) > 9:  # "¹³", 5,000 digits
            break
        out.append(int(piece))
    if isinstance(text, str) and len(_PARSED) < 4096:
        _PARSED[text] = tuple(out)
    return tuple(out)


def short_version(text: "str | None") -> str:
    return ".".join(str(n) for n in version_tuple(text)[:2])


def new_record(root: str, real: str, status: str, problems: "list[str]", *, version: "str | None" = None,
               nvcc: "str | None" = None, bin_dirs: "list[str] | None" = None, lib_dirs: "list[str] | None" = None,
               isolated: bool = False, components: "dict[str, str] | None" = None, layout: str = "classic",
               missing: "list[str] | None" = None, outside_root: bool = False) -> "ToolkitRecord":
    """The one place a record is made, with every key (discovery later adds only sources and view dirs)."""
    return {"version": version, "root": root, "real": real, "sources": [], "origins": {}, "nvcc": nvcc,
            "status": status, "problems": problems, "bin_dirs": bin_dirs or [], "lib_dirs": lib_dirs or [],
            "env_bin": None, "env_lib": None, "isolated": isolated, "components": components or {},
            "layout": layout, "missing": missing or [], "outside_root": outside_root}


class Toolkit:
    """Read-only view of a registry record, for renderers: its public JSON."""

    __slots__ = ("record",)

    record: "AnyRecord"

    def __init__(self, record: "AnyRecord") -> None:
        object.__setattr__(self, "record", record)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Toolkit is read-only")

    @property
    def short(self) -> str:
        return short_version(self.record["version"])

    def public(self, default: bool = False, active: bool = False) -> dict:
        """The stable JSON shape of `list --json`, plus extra keys (never renamed)."""
        out = {key: self.record.get(key) for key in PUBLIC_KEYS}
        out.update(short=self.short, default=default, active=active, origins=self.record.get("origins", {}))
        out["components"], out["version_json"] = list_components(self.record.get("components", {}),
                                                                  bool(self.record.get("nvcc")))
        return out


def list_components(found: "Mapping[str, str]", has_nvcc: bool = True) -> "tuple[dict, dict]":
    """({component: version | None}, version.json's entries) from version.json and libcudart's x.y.z name."""
    version_json = {k: v for k, v in found.items() if k != "cudart_soname"}
    components = {name: version_json.get(VERSION_JSON_KEYS.get(name, "")) for name in COMPONENTS}
    if not has_nvcc:  # version.json lists cuda_nvcc for a runtime-only tree too (ptxas is in that package)
        components["nvcc"] = None
    soname = found.get("cudart_soname") or ""
    if components["cudart"] is None and soname.count(".") >= 2:
        components["cudart"] = soname
    return components, version_json
