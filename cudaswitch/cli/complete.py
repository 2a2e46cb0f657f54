"""Values for shell completion, from the cached registry only: a TAB must never start discovery
(nvcc probes, module systems), so a missing or stale cache simply completes nothing new.

A version in the cache came from a file anyone may have written (an image's version.json, a
conda package's metadata), and a completion candidate lands on the user's command line: only
plain version text is offered (letters, digits, `.`, `+`, `_`, `-`, up to 64 characters, and a
source the registry knows before a `:`), so no shell ever sees a quote, `$`, backslash,
backtick, glob, space or newline in one."""

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


def requests() -> "list[str]":
    """Requests a user can type: each toolkit's short and full version, newest first, then SOURCE:short."""
    from cudaswitch import cache as cachefile
    from cudaswitch.paths import Paths
    from cudaswitch.registry.discover import CACHE_FILE
    from cudaswitch.request import SOURCES

    cache = cachefile.load(Paths().cache_dir, CACHE_FILE)  # sealed; never discovery
    records = cache.get("records") if isinstance(cache, dict) else None
    if not isinstance(records, list):
        return []
    values = []
    for record in records:
        version = record.get("version") if isinstance(record, dict) else None
        if not plain_version(version):
            continue
        short = ".".join(version.split(".")[:2])
        sources = record.get("sources")
        known = [s for s in sources if isinstance(s, str) and s in SOURCES] if isinstance(sources, list) else []
        values += [short, version] + ["%s:%s" % (source, short) for source in known]
    return list(dict.fromkeys(values))
