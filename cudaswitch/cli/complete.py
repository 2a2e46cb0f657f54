"""Values for shell completion, from the cached registry only: a TAB must never start discovery
(nvcc probes, module systems), so a missing or stale cache simply completes nothing new."""


def requests():
    """Requests a user can type: each toolkit's short and full version, newest first, then SOURCE:short."""
    from cudaswitch.paths import Paths
    from cudaswitch.registry.discover import CACHE_MAX_BYTES
    from cudaswitch.safeio import load_marshal

    cache = load_marshal(Paths().registry_cache, CACHE_MAX_BYTES)  # sealed; never discovery
    records = cache.get("records") if isinstance(cache, dict) else None
    if not isinstance(records, list):
        return []
    records = [r for r in records if isinstance(r, dict)]
    values = []
    for record in records:
        version = record.get("version")
        if not isinstance(version, str):
            continue
        short = ".".join(version.split(".")[:2])
        values += [short, version] + ["%s:%s" % (s, short) for s in record.get("sources") or () if isinstance(s, str)]
    return list(dict.fromkeys(values))
