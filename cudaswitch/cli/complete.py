"""Values for shell completion, from the cached registry only: a TAB must never start discovery.
A cached version came from a file anyone may have written and lands on the user's command line,
so only plain version text is offered: no quote, `$`, backslash, backtick, glob or space."""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypeGuard

PLAIN = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.+_-")
ALNUM = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
MAX_LENGTH = 64


def plain_version(text: object) -> "TypeGuard[str]":
    """Whether text is safe to offer as a version on any shell's command line."""
    return (isinstance(text, str) and 0 < len(text) <= MAX_LENGTH and text[0] in ALNUM
            and all(c in PLAIN for c in text))


def _records() -> "list[dict]":
    """The cached registry's records (sealed; never discovery), or none."""
    from cudaswitch import cache as cachefile
    from cudaswitch.paths import Paths
    from cudaswitch.registry.discover import CACHE_FILE

    cache = cachefile.load(Paths().cache_dir, CACHE_FILE)
    records = cache.get("records") if isinstance(cache, dict) else None
    return [r for r in records if isinstance(r, dict)] if isinstance(records, list) else []


def requests(source: "str | None" = None) -> "list[str]":
    """Requests a user can type: each toolkit's short and full version, newest first, then SOURCE:short;
    with `source`, only that source's toolkits (uninstall: the managed ones)."""
    from cudaswitch.request import SOURCES

    values = []
    for record in _records():
        version = record.get("version")
        if not plain_version(version) or (source and source not in (record.get("sources") or ())):
            continue
        short = ".".join(version.split(".")[:2])
        sources = record.get("sources")
        known = [s for s in sources if isinstance(s, str) and s in SOURCES] if isinstance(sources, list) else []
        values += [short, version] + ["%s:%s" % (source, short) for source in known]
    return list(dict.fromkeys(values))


def managed() -> "list[str]":
    return requests("managed")


def releases() -> "list[str]":
    """CUDA releases an install can name, newest first: the compat table's, no server asked."""
    from cudaswitch.verify import facttables

    rows = facttables.load()["driver_minimum"]
    return [row["cuda"] for row in sorted(rows, key=lambda r: facttables.release_tuple(r["cuda"]), reverse=True)]


def arches() -> "list[str]":
    """GPU architectures by the names --gpu takes (sm_86), from the compat table's."""
    from cudaswitch.verify import facttables

    return ["sm_%s" % sm for row in facttables.load()["arch"] for sm in row["sm"]]


def tools(request: "str | None") -> "list[str]":
    """The commands in the bin dirs of the cached toolkit REQUEST names (exec 13.1 -- nv<TAB>)."""
    import os

    from cudaswitch.errors import CudaSwitchError
    from cudaswitch.request import ToolkitRequest, select

    try:
        record = select(ToolkitRequest.parse(request or ""), _records())
    except CudaSwitchError:
        return []
    names: "list[str]" = []
    for directory in (record or {}).get("bin_dirs") or ():
        try:
            names += [n for n in sorted(os.listdir(directory)) if plain_version(n)
                      and os.access(os.path.join(directory, n), os.X_OK)]
        except OSError:
            continue
    return list(dict.fromkeys(names))
