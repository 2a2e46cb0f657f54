"""cudaswitch/data/ (sources.toml, compat.toml, torch_builds.toml), loaded once and checked as they
load, and the lookups verdicts need. Every fact is stated once, with a known source: a fact stated
twice, a source no row names, a table nothing reads or a build row without checkable evidence stops
the program rather than letting a guess pass for a fact."""

import functools
import os
import re
import sys

from cudaswitch.errors import CudaSwitchError
from cudaswitch.toolkit import short_version, version_tuple

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from pathlib import Path


DATA_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")
DATA_FILES = ("sources.toml", "compat.toml", "torch_builds.toml")
# The tables each file may hold, each read by a lookup of this module (or verify/torchplan.py), with
# the fields that name one fact: a second row with the same value states that fact twice (a list's
# every item counts). None: a single table.
COMPAT_TABLES = {"driver_minimum": ("cuda",), "release": ("cuda",), "minor_compat": ("major",),
                 "minor_compat_caveat": None,
                 "gcc_ceiling": ("cuda_from",), "arch": ("sm",), "gpu_kinds": None, "wheel_libraries": None,
                 "error": ("id",)}
TORCH_TABLES = {"index": None, "driver_branch": ("sm",), "build": ("torch", "cuda", "platform")}
SOURCE_FIELDS = ("source", "last_source", "also")
RETRIEVED = re.compile(r"^\d{4}-\d{2}(-\d{2})?$")


class TableError(CudaSwitchError):
    """A data table that breaks its own rules (a packaging or editing mistake)."""


@functools.lru_cache(maxsize=1)
def tables() -> dict:
    """Parsed and checked once per state of the files (and of this module's rules): `torch` reads them on every run."""
    from cudaswitch import cache
    from cudaswitch.paths import Paths

    files = [os.path.join(DATA_DIR, name) for name in DATA_FILES] + [os.path.abspath(__file__)]
    return cache.parsed(Paths().cache_dir, "tables.marshal", tuple(files), load_tables)


def load() -> dict:
    return tables()["compat"]


def load_tables(directory: "str | Path | None" = None, rule_ids: "set | None" = None) -> dict:
    """{"sources", "compat", "torch"} from `directory` (default: the package's), checked; `rule_ids`: explain's ids."""
    texts = {name: _read(directory, name) for name in DATA_FILES}
    sources = parse_sources(texts["sources.toml"])
    compat = _toml(texts["compat.toml"], "compat.toml")
    _check_tables(compat, COMPAT_TABLES, "compat.toml")
    _check_ranges(compat["gcc_ceiling"], "compat.toml [[gcc_ceiling]]")
    torch = parse_torch_table(texts["torch_builds.toml"], "torch_builds.toml", sources)
    _check_tables(torch, TORCH_TABLES, "torch_builds.toml")
    used = _source_keys(compat, sources, "compat.toml") | _source_keys(torch, sources, "torch_builds.toml")
    unused = sorted(set(sources) - used)
    if unused:
        raise TableError("sources.toml: %s is named by no row (remove it)" % unused[0])
    if rule_ids is not None:
        check_rule_ids(compat["error"], rule_ids)
    return {"sources": sources, "compat": compat, "torch": torch}


def _read(directory: "str | Path | None", name: str) -> str:
    with open(os.path.join(directory or DATA_DIR, name), encoding="utf-8") as handle:
        return handle.read()


def _toml(text: str, where: str) -> dict:
    if sys.version_info >= (3, 11):  # imported here: a cached parse (tables()) needs no tomllib
        import tomllib
    else:  # pragma: no cover - exercised on 3.10 only
        import tomli as tomllib
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TableError("%s: %s" % (where, str(exc).splitlines()[0])) from None


def parse_sources(text: str) -> dict:
    """sources.toml: each source a table with a title, a url or path, and a retrieval date."""
    sources = _toml(text, "sources.toml")
    for key, source in sources.items():
        if not isinstance(source, dict) or not source.get("title"):
            raise TableError("sources.toml: source %s has no title" % key)
        if not (source.get("url") or source.get("path")):
            raise TableError("sources.toml: source %s says neither a url nor a path" % key)
        if not RETRIEVED.match(str(source.get("retrieved") or "")):
            raise TableError("sources.toml: source %s has no retrieval date (retrieved = YYYY-MM[-DD])" % key)
    return sources


def _check_tables(data: dict, known: dict, where: str) -> None:
    for name, value in data.items():
        if name not in known:
            raise TableError("%s: table [%s] is read by nothing (remove it, or the code that would read it)"
                             % (where, name))
        if known[name] is not None:
            _check_once(value, known[name], "%s [[%s]]" % (where, name))


def _check_once(rows: list, fields: "tuple[str, ...]", where: str) -> None:
    """No two rows state the same fact (the same value of `fields`; each item of a list field)."""
    seen: "dict[tuple, int]" = {}
    for number, row in enumerate(rows, 1):
        values = [row.get(f) for f in fields]
        keys = [tuple(values)] if not any(isinstance(v, list) for v in values) else \
            [(item,) for item in values[0]]
        for key in keys:
            if key in seen:
                raise TableError("%s: rows %d and %d both state %s %s" % (
                    where, seen[key], number, "/".join(fields), " ".join(str(k) for k in key)))
            seen[key] = number


def _check_ranges(rows: "list[dict]", where: str) -> None:
    """Version ranges (cuda_from..cuda_to) that overlap state a fact twice for the releases in both."""
    spans = sorted((version_tuple(r["cuda_from"]), version_tuple(r["cuda_to"]), n) for n, r in enumerate(rows, 1))
    for (_, high, first), (low, _, second) in zip(spans, spans[1:]):
        if low <= high:
            raise TableError("%s: rows %d and %d overlap" % (where, first, second))


def _source_keys(data: dict, sources: dict, where: str) -> "set[str]":
    """The source keys the rows of `data` name; an unknown one is refused."""
    used = set()
    for name, value in data.items():
        for number, row in enumerate(value if isinstance(value, list) else [value], 1):
            for field in SOURCE_FIELDS:
                key = row.get(field) if isinstance(row, dict) else None
                if key is None:
                    continue
                if key not in sources:
                    raise TableError("%s: [%s] row %d names source %r, which sources.toml does not define"
                                     % (where, name, number, key))
                used.add(key)
    return used


def check_rule_ids(rules: list, known: set) -> None:
    """explain's rules name check ids of the registry, each shown by explain."""
    for rule in rules:
        unknown = [c for c in rule.get("checks") or [] if c not in known]
        if unknown or not rule.get("checks"):
            raise TableError("compat.toml: error rule %s names check %s, which no registered check makes for "
                             "explain" % (rule.get("id"), unknown[0] if unknown else "(none)"))


def release_tuple(text: str) -> tuple:
    """'535.129.03' -> (535, 129, 3); a driver release compares numerically part by part."""
    return tuple(int(p[:9]) for p in (text or "").split(".") if p.isascii() and p.isdigit())


def driver_minimum(cuda: str) -> "dict | None":
    """The table-1 row for CUDA 'x.y' (minimum Linux driver of its GA release), or None."""
    return next((r for r in load()["driver_minimum"] if version_tuple(r["cuda"]) == version_tuple(cuda)[:2]), None)


def driver_cuda(release: str) -> dict:
    """{"cuda": the newest CUDA 'x.y' whose GA minimum the release meets (550.54 stands for every
    550.54.x), "cuda_at_least": the branch is newer than every row (that CUDA or newer), "older_than":
    the oldest row when the release predates every one}."""
    have = release_tuple(release)
    rows = sorted(load()["driver_minimum"], key=lambda r: release_tuple(r["driver"]))
    fits = [r for r in rows if release_tuple(r["driver"])[:len(have)] <= have]
    newest = max(fits, key=lambda r: version_tuple(r["cuda"]), default=None)
    return {"cuda": newest["cuda"] if newest else None,
            "cuda_at_least": bool(have) and have[0] > release_tuple(rows[-1]["driver"])[0],
            "older_than": None if fits or not rows else rows[0]}


def minor_compat(major: int) -> "dict | None":
    return next((row for row in load()["minor_compat"] if row["major"] == major), None)


def gcc_ceiling(cuda: str) -> tuple:
    """(newest gcc major, row) from compat.toml's gcc_ceiling rows for a toolkit version, or (None, None)."""
    have = version_tuple(cuda)
    for row in load()["gcc_ceiling"]:
        low, high = version_tuple(row["cuda_from"]), version_tuple(row["cuda_to"])
        if low <= have[:len(low)] and have[:len(high)] <= high:
            return row["gcc"], row
    return None, None


def torch_variants(torch_version: str, platform: str = "linux-x86_64") -> tuple:
    """(CUDA variants of a release ('2.4.1+cu124': 2.4's), whether one has a single copy only), or ([], False)."""
    short = short_version(torch_version.split("+")[0])
    rows = [r for r in torch_rows(platform) if r["torch"] == short]
    return sorted({r["cuda"] for r in rows}, key=version_tuple), any(r.get("single_copy") for r in rows)


def arch_row(sm: str) -> "dict | None":
    """The table-6 row for 'sm_86' / '86' / '8.6'."""
    key = sm.replace("sm_", "").replace("compute_", "").replace(".", "")
    return next((row for row in load()["arch"] if key in row["sm"]), None)


def can_target(cuda: str, capability: str) -> bool:
    """Can any code a CUDA `cuda` nvcc emits run on a GPU of `capability` ('6.1')? Code runs only at an
    equal or lower capability, so a toolkit whose lowest target is above the GPU (CUDA 13 for Pascal)
    can build nothing for it."""
    have, want = version_tuple(cuda)[:2], version_tuple(capability)[:2]
    return any(version_tuple(row["first"]) <= have and (not row["last"] or have <= version_tuple(row["last"]))
               and any(s.isdigit() and (int(s[:-1]), int(s[-1])) <= want for s in row["sm"]) for row in load()["arch"])


# What makes each kind of evidence checkable; "none" is a build known to exist (its source says
# so) whose arch list nobody has confirmed: cudaswitch cannot tell whether it fits.
EVIDENCE = {"wheel": ("wheel", "sha256"), "build-script": ("path", "commit"), "release-pr": ("pr",),
            "published": ("url",), "none": ()}
PLATFORMS = ("linux-x86_64", "linux-aarch64", "windows")
ARCH_NAME = re.compile(r"^(sm|compute)_\d{2,3}[af]?$")
RELEASE_NAME = re.compile(r"^\d+\.\d+$")


def torch_table() -> dict:
    return tables()["torch"]


def parse_torch_table(text: str, where: str = "torch table", sources: "dict | None" = None) -> dict:
    """The parsed table, every row checked. `sources`: the known keys (a snippet may carry its own [sources])."""
    data = _toml(text, where)
    if sources is None:
        sources = data.pop("sources", None) or tables()["sources"]
    seen = set()
    for number, row in enumerate(data.get("build") or [], 1):
        _check_build(row, sources, "%s: build row %d" % (where, number))
        key = (row["torch"], row["cuda"], row["platform"])
        if key in seen:
            raise TableError("%s: build row %d repeats torch %s CUDA %s %s" % ((where, number) + key))
        seen.add(key)
    for number, row in enumerate(data.get("driver_branch") or [], 1):
        if row.get("source") not in sources or not row.get("evidence"):
            raise TableError("%s: driver_branch row %d has no evidence kind or no known source" % (where, number))
    return data


def _check_build(row: dict, sources: dict, where: str) -> None:
    kind = row.get("evidence")
    if kind not in EVIDENCE:
        raise TableError("%s has evidence %r, not one of %s" % (where, kind, ", ".join(EVIDENCE)))
    if row.get("source") not in sources:
        raise TableError("%s names source %r, which [sources] does not define" % (where, row.get("source")))
    missing = [k for k in ("torch", "cuda", "platform") + EVIDENCE[kind] if not row.get(k)]
    if missing:
        raise TableError("%s (evidence %s) lacks %s" % (where, kind, ", ".join(missing)))
    if not RELEASE_NAME.match(row["torch"]) or not RELEASE_NAME.match(row["cuda"]) or row["platform"] not in PLATFORMS:
        raise TableError("%s: torch %r, cuda %r, platform %r" % (where, row["torch"], row["cuda"], row["platform"]))
    arch = row.get("arch")
    if kind != "none" and (not isinstance(arch, list) or not arch or not all(ARCH_NAME.match(str(a)) for a in arch)):
        raise TableError("%s (evidence %s) needs an arch list of sm_XY / compute_XY names" % (where, kind))
    if kind == "wheel" and not re.match(r"^[0-9a-f]{64}$", row["sha256"]):
        raise TableError("%s: sha256 is not 64 hex digits" % where)


def torch_rows(platform: str = "linux-x86_64") -> list:
    return [r for r in torch_table()["build"] if r["platform"] == platform]


def newest_torch_known(platform: str = "linux-x86_64") -> "str | None":
    """The newest torch release the table has any row for ('2.15')."""
    return max((r["torch"] for r in torch_rows(platform)), key=version_tuple, default=None)


def runs_on(capability: str, arch_list: list) -> bool:
    """Does code in `arch_list` run on `capability` ('6.1')? SASS and family code (sm_100f): same major,
    equal or higher minor; PTX: any equal or higher capability; sm_90a: that arch only."""
    have = version_tuple(capability)[:2]
    for name in arch_list:
        match = re.match(r"^(sm|compute)_(\d+)(\d)([af]?)$", name)
        if not match:
            continue
        arch, suffix = (int(match.group(2)), int(match.group(3))), match.group(4)
        if suffix == "a":
            fits = arch == have
        elif suffix == "f" or match.group(1) == "sm":
            fits = arch[0] == have[0] and arch[1] <= have[1]
        else:
            fits = arch <= have
        if fits:
            return True
    return False


def torch_builds_for(capability: str, platform: str = "linux-x86_64") -> list:
    """(torch, cuda) of evidence-backed builds with code for `capability` ('6.1'), newest first."""
    rows = [r for r in torch_rows(platform) if r["evidence"] != "none" and runs_on(capability, r["arch"])]
    rows.sort(key=lambda r: (version_tuple(r["torch"]), version_tuple(r["cuda"])), reverse=True)
    return [(r["torch"], r["cuda"]) for r in rows]


def error_rules(known_ids: set) -> list:
    """compat.toml's explain rules, each naming only ids in `known_ids` (the registry's)."""
    rules = load()["error"]
    check_rule_ids(rules, known_ids)
    return rules


def cudnn_version_string(value: object) -> "str | None":
    """torch.backends.cudnn.version() -> '9.1.0'. cuDNN's encoding: MAJOR*1000+MINOR*100+PATCH up to
    v8 (8907 = 8.9.7), MAJOR*10000+MINOR*100+PATCH from v9 (90100 = 9.1.0, 91000 = 9.10.0)."""
    if not isinstance(value, int) or value <= 0:
        return None
    scale = 10000 if value >= 90000 else 1000
    major, rest = divmod(value, scale)
    return "%d.%d.%d" % (major, rest // 100, rest % 100)
