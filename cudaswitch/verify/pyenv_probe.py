"""Run by the USER's Python (3.8+, so nothing here may import cudaswitch) as `python -c <this source>
[MODULE...] MARKER`: its distributions judged as `pip check` would, without starting pip (installed
twice, requirements missing or unsatisfied; needs `packaging` or pip's vendored copy, else says so),
and where each MODULE would import from. Prints `MARKER<json>MARKER` last."""

import json
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def load_packaging() -> "tuple[Any, Any, Any] | None":
    """(Requirement, Version, canonicalize_name) from packaging, else from pip's vendored copy."""
    for base in ("packaging", "pip._vendor.packaging"):
        try:
            requirements = __import__(base + ".requirements", fromlist=["Requirement"])
            version = __import__(base + ".version", fromlist=["Version"])
            utils = __import__(base + ".utils", fromlist=["canonicalize_name"])
            return requirements.Requirement, version.Version, utils.canonicalize_name
        except Exception:  # a broken or missing copy: try the next, else report none
            continue
    return None


def normalize(name: str) -> str:
    return name.replace("_", "-").replace(".", "-").lower()


def distributions() -> "list[dict]":
    """Every distribution importlib.metadata finds, in sys.path order (the first of a name wins)."""
    from importlib import metadata

    out = []
    for dist in metadata.distributions():
        name = dist.metadata.get("Name")  # type: ignore[attr-defined]
        if not name:
            continue
        where = getattr(dist, "_path", None)  # the .dist-info / .egg-info directory itself
        out.append({"name": str(name), "key": normalize(str(name)), "version": str(dist.version),
                    "path": str(where) if where else str(dist.locate_file("")), "requires": list(dist.requires or [])})
    return out


def conflicts(dists: "list[dict]", packaging: "tuple[Any, Any, Any]") -> "list[dict]":
    """pip check's findings: a requirement whose distribution is missing or of another version."""
    requirement, version, _ = packaging
    first: "dict[str, dict]" = {}
    for dist in dists:
        first.setdefault(dist["key"], dist)
    out = []
    for dist in first.values():
        for text in dist["requires"]:
            try:
                req = requirement(text)
                if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                    continue
            except Exception:  # an unparsable requirement is not one pip check reports either
                continue
            have = first.get(normalize(req.name))
            if have is None:
                out.append({"name": dist["name"], "version": dist["version"], "requires": req.name, "have": None})
                continue
            try:
                ok = req.specifier.contains(version(have["version"]), prereleases=True)
            except Exception:  # a version packaging cannot parse: pip check skips it too
                continue
            if not ok:
                out.append({"name": dist["name"], "version": dist["version"], "requires": str(req),
                            "needs": have["name"], "have": have["version"]})
    return out


def module_origin(name: str) -> "str | None":
    """Where `import name` would come from, without importing it."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
    except Exception:
        return None
    if spec is None:
        return None
    return spec.origin if spec.origin not in (None, "namespace") else ",".join(spec.submodule_search_locations or [])


def probe(modules: "list[str]") -> dict:
    out: dict = {"python": sys.executable, "python_version": "%d.%d.%d" % sys.version_info[:3],
                 "prefix": sys.prefix, "torch": module_origin("torch"),
                 "modules": {name: module_origin(name) for name in modules}}
    dists = distributions()
    by_key: "dict[str, list[dict]]" = {}
    for dist in dists:
        by_key.setdefault(dist["key"], []).append({"version": dist["version"], "path": dist["path"]})
    out["distributions"] = len(by_key)
    out["duplicates"] = {key: found for key, found in sorted(by_key.items()) if len(found) > 1}
    packaging = load_packaging()
    out["conflicts"] = conflicts(dists, packaging) if packaging else None
    return out


def main() -> None:
    marker = sys.argv[-1] if len(sys.argv) > 1 else "@@CUDASWITCH@@"
    try:
        result = probe(sys.argv[1:-1])
    except BaseException as exc:  # a hostile sitecustomize or metadata file: report it
        result = {"fatal": "%s: %s" % (type(exc).__name__, exc)}
    os.write(1, ("\n" + marker + json.dumps(result, default=str) + marker + "\n").encode("ascii"))


main()
