"""What cudaswitch knows and how old it is (`cudaswitch facts`), and `facts refresh`: the CUDA
releases and bundled drivers the redist index has beyond the shipped driver table (a minor's GA
release, its lowest label, gives its minimum driver, as the table's rows do). What the index adds
is cached and shown apart with the day it was read: it never overrides a shipped fact.
"""

import datetime

from cudaswitch import cache
from cudaswitch.install import redist
from cudaswitch.paths import Paths
from cudaswitch.toolkit import version_tuple
from cudaswitch.verify import facttables

CACHE_FILE = "facts-refresh.marshal"


def _sourced(fact: dict, key: str) -> dict:
    """`fact` with where it comes from and when that source was read."""
    source = facttables.tables()["sources"][key]
    return dict(fact, source=key, source_title=source["title"], where=source.get("url") or source.get("path"),
                retrieved=source["retrieved"])


def shipped() -> dict:
    """The newest CUDA release, driver branch, GPU architecture and torch release in the tables."""
    compat = facttables.load()
    release = max(compat["release"] + compat["driver_minimum"], key=lambda r: version_tuple(r["cuda"]))
    driver = max(compat["driver_minimum"], key=lambda r: version_tuple(r["cuda"]))
    arch = max(compat["arch"], key=lambda r: (version_tuple(r["first"]), max(int(s.rstrip("af")) for s in r["sm"])))
    newest_torch = facttables.newest_torch_known()
    torch_row = max((r for r in facttables.torch_rows() if r["torch"] == newest_torch),
                    key=lambda r: r["evidence"] == "wheel")
    return {
        "cuda": _sourced({"cuda": release["cuda"], "label": release.get("label"), "date": release.get("date")},
                         release["source"]),
        "driver_branch": _sourced({"branch": "R%d" % facttables.release_tuple(driver["driver"])[0],
                                   "cuda": driver["cuda"], "driver": driver["driver"]}, driver["source"]),
        "gpu_arch": _sourced({"sm": ["sm_" + s for s in arch["sm"]], "first_cuda": arch["first"],
                              "note": arch.get("note")}, arch["source"]),
        "torch": _sourced({"torch": newest_torch, "release": torch_row.get("release"), "cuda": torch_row["cuda"],
                           "evidence": torch_row["evidence"]}, torch_row["source"]),
    }


def cached(paths: "Paths") -> "dict | None":
    """What the last `facts refresh` read: {"base", "read", "releases": [{"cuda", "label", "driver",
    "date"}]}, or None."""
    found = cache.load(paths.cache_dir, CACHE_FILE)
    return found if isinstance(found, dict) and isinstance(found.get("releases"), list) else None


def view(paths: "Paths") -> dict:
    return {"shipped": shipped(), "refreshed": cached(paths)}


def refresh(paths: "Paths", base: str, timeout: float = redist.FETCH_TIMEOUT) -> "tuple[dict, str | None]":
    """(the facts view, None) after reading the index at `base`; (the cached view, why) when the
    index cannot be read."""
    newest = max(version_tuple(r["cuda"]) for r in facttables.load()["driver_minimum"])
    manifests = redist.ManifestCache(paths.cache_dir, base)
    try:
        labels, offline = manifests.releases(timeout)
        if offline:
            return view(paths), "cannot read the redist index at %s: its cached listing is older" % base
        found = _ga_drivers(manifests, [x for x in labels if version_tuple(x)[:2] > newest], timeout)
    except redist.Unreachable as exc:
        return view(paths), str(exc)
    today = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    cache.store(paths.cache_dir, CACHE_FILE, {"base": base, "read": today, "releases": found})
    return view(paths), None


def _ga_drivers(manifests: "redist.ManifestCache", labels: "list[str]", timeout: float) -> "list[dict]":
    """Per CUDA minor of `labels`, its lowest release whose manifest names a bundled driver."""
    out: "dict[str, dict]" = {}
    for label in sorted(labels, key=version_tuple):
        minor = "%d.%d" % version_tuple(label)[:2]
        if minor in out:
            continue
        document = manifests.manifest(label, timeout)
        driver = document.get("nvidia_driver")
        version = driver.get("version") if isinstance(driver, dict) else None
        if isinstance(version, str) and facttables.release_tuple(version):
            out[minor] = {"cuda": minor, "label": label, "driver": version, "date": document.get("release_date")}
    return list(out.values())


def lines(facts: dict) -> "list[str]":
    """The human view: one line per fact, each followed by its source and date."""
    s = facts["shipped"]
    cuda, branch, arch, torch = s["cuda"], s["driver_branch"], s["gpu_arch"], s["torch"]
    out: "list[str]" = []
    for text, fact in (
            ("newest CUDA release: %s%s" % (cuda["cuda"], " (%s, %s)" % (cuda["label"], cuda["date"])
                                            if cuda.get("label") else ""), cuda),
            ("newest driver branch: %s (CUDA %s needs %s)" % (branch["branch"], branch["cuda"], branch["driver"]),
             branch),
            ("newest GPU architecture: %s (from CUDA %s)%s" % (" ".join(arch["sm"]), arch["first_cuda"],
                                                                ": " + arch["note"] if arch.get("note") else ""), arch),
            ("newest torch release: %s (%s, CUDA %s)" % (torch["torch"], torch.get("release") or "release unknown",
                                                           torch["cuda"]), torch)):
        out += [text, "  source: %s, read %s: %s" % (fact["source"], fact["retrieved"], fact["where"])]
    refreshed = facts["refreshed"]
    if not refreshed:
        return out + ["from the redist index: nothing yet (`cudaswitch facts refresh` reads it)"]
    out.append("from the redist index of %s (%s):" % (refreshed["read"], refreshed["base"]))
    out += ["  CUDA %s (%s, %s): driver %s or newer" % (r["cuda"], r["label"], r.get("date") or "no date",
                                                       r["driver"]) for r in refreshed["releases"]]
    return out + ([] if refreshed["releases"] else ["  no release newer than the shipped driver table"])
