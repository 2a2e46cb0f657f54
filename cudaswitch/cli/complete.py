"""Values for shell completion, from the cached registry only: a TAB must never start discovery
(nvcc probes, module systems), so a missing or stale cache simply completes nothing new."""

import marshal


def requests():
    """Requests a user can type: each toolkit's short and full version, newest first, then SOURCE:short."""
    from cudaswitch.paths import Paths

    try:
        with open(Paths().registry_cache, "rb") as handle:
            cache = marshal.load(handle)
        records = [r for r in cache["records"] if isinstance(r, dict)]
    except (OSError, ValueError, EOFError, TypeError, KeyError):
        return []
    values = []
    for record in records:
        version = record.get("version")
        if not isinstance(version, str):
            continue
        short = ".".join(version.split(".")[:2])
        values += [short, version] + ["%s:%s" % (s, short) for s in record.get("sources") or () if isinstance(s, str)]
    return list(dict.fromkeys(values))
