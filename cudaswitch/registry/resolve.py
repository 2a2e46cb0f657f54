"""Resolve a request against the registry: one Toolkit record, or ToolkitNotFound built from the
same source list that discovery walked."""

from cudaswitch.errors import ToolkitNotFound
from cudaswitch.request import ToolkitRequest, select
from cudaswitch.toolkit import short_version, version_tuple


def resolve(registry: dict, request: "str | ToolkitRequest") -> dict:
    parsed = ToolkitRequest.parse(request, allow_path=True) if isinstance(request, str) else request
    found = select(parsed, registry["records"], registry["source_order"], registry["system_real"])
    if found is None:
        raise not_found(registry, parsed)
    return found


def not_found(registry: dict, request: ToolkitRequest) -> ToolkitNotFound:
    from cudaswitch.registry.sources import source_modules

    modules = source_modules()
    order = registry["source_order"]
    asked = [s for s in order if s in modules] if not request.source else [request.source]
    # SOURCE:REQUEST asks one source: what other sources hold is no answer to it
    records = [r for r in registry["records"] if not request.source or request.source in r.get("sources", ())]
    versions = sorted({r["version"] for r in records if r["version"]}, key=version_tuple)
    message = "no toolkit matches %r in %s" % (request.text, _join(asked))
    if versions:
        message += " (found%s: %s)" % (" in " + request.source if request.source else "", ", ".join(versions))
    elif request.source and registry["records"]:
        message += " (%s has no toolkits here)" % request.source
    else:
        message += " (no toolkits found at all)"
    hint = _nearest_hint(request, versions)
    if request.source and not versions and registry["records"]:
        hint = "`cudaswitch list` shows the toolkits of every source"
    elif not versions:
        from cudaswitch.registry.sources import searched

        hint = "searched %s; %s" % (searched(order), hint)
    return ToolkitNotFound(message, hint)


def _join(names: "list[str]") -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def _nearest_hint(request: ToolkitRequest, versions: "list[str]") -> str:
    if not versions:
        return "install one with `cudaswitch install VERSION` or register a root in config.toml"
    if request.kind == "version":
        wanted = (request.value + (0, 0, 0))[:3]
        nearest = min(versions, key=lambda v: [abs(h - w) for h, w in zip(version_tuple(v) + (0, 0, 0), wanted)])
        prefix = request.source + ":" if request.source else ""
        # no release named to install: only the install source knows which exist (`use 17.2`
        # suggested `cudaswitch install 17.2`), and asking it here would reach the network
        return "nearest: %s%s; `cudaswitch install --list` shows the releases to install" % (
            prefix, short_version(nearest))
    return "`cudaswitch list` shows them all"
