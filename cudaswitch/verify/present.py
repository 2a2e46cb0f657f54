"""Human-readable lines for check reports and torch's plan (render.py prints them; JSON goes out as is)."""

from cudaswitch.verify.compat import cuda_words

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cudaswitch.verify.checkregistry import CheckResult

MARKS = {"ok": "ok  ", "info": "info", "warning": "WARN", "error": "FAIL"}


def check_lines(checks: "list[CheckResult]", group_key: "str | None" = None) -> list:
    """One line per check (`ok   message`), its hint indented below; optional group headers."""
    lines, group = [], None
    for item in checks:
        if group_key and item.get(group_key) != group:
            group = item.get(group_key)
            lines.append("%s:" % group)
        lines.append("  %s  %s" % (MARKS.get(item["level"], item["level"]), item["message"]))
        if item.get("hint") and item["level"] != "ok":
            lines.append("          -> %s" % item["hint"])
    return lines


def toolkit_line(public: "dict | None") -> str:
    if not public:
        return "toolkit: none"
    return "toolkit: CUDA %s at %s (%s)" % (public.get("version") or "?", public["root"], public["status"])


def summary_line(checks: "list[CheckResult]") -> str:
    """"summary: 2 errors, 1 warning, 3 info, 5 ok": info and ok read as labels, not nouns."""
    from cudaswitch.render import counted

    counts = [(level, sum(item["level"] == level for item in checks)) for level in ("error", "warning", "info", "ok")]
    return "summary: " + ", ".join(counted(n, level) if level in ("error", "warning") else "%d %s" % (n, level)
                                   for level, n in counts if n)


def explain_lines(result: dict) -> list:
    if not result["matches"]:
        return [result["message"]]
    lines: list = []
    for match in result["matches"]:
        lines += ["%s  (matched: %r)" % (match["id"], match["matched"]), "  cause: " + match["cause"],
                  "  do:    " + match["todo"], "  on this host:"]
        lines += ["  " + line for line in check_lines(match["checks"])]
    return lines


FIT_WORD = {True: "fits", False: "no", None: "unknown"}
# conda/pixi's __cuda_arch is the lowest compute capability, NVIDIA's variant provider picks from
# the highest: neither covers every GPU of a mixed machine, which is what a process may run on.
MIXED = (" (mixed: a build must have code for every GPU; conda's __cuda_arch names only the lowest, NVIDIA's "
         "variant provider the highest)")
EVIDENCE_WORD = {"wheel": "read from the wheel", "build-script": "build script", "release-pr": "release PR",
                 "published": "published list", "installed": "its own flags", "none": "no evidence"}


def plan_lines(result: dict) -> "list[str]":
    """`cudaswitch torch`: the host facts, what to do, then every build with its verdict and evidence."""
    lines = _host_lines(result) + _installed_lines(result)
    if result["table"].get("note"):
        lines.append("table: " + result["table"]["note"])
    best = result["recommended"]
    if best and result.get("keep"):
        lines.append("recommended: keep the installed torch %s (%s)" % (best["installed"], result["reason"]))
        lines += _extension_lines(best)
    elif best:
        lines.append("recommended: torch %s+%s (%s)" % (best["torch"], best["variant"], result["reason"]))
        lines += ["  " + best["install"][k] for k in ("pip", "uv", "conda")]
        lines.append("  (conda builds carry their own arch lists, not these pip wheels': the verdict is the pip "
                     "wheel's)")
        lines += _extension_lines(best)
        newer = next(b for b in result["builds"] if b["fits"] is True and b["published"] and b["verified"])
        if newer is not best:
            lines.append("  (torch %s+%s is newer and fits, but the toolkit cannot build extensions for it)"
                         % (newer["torch"], newer["variant"]))
    else:
        lines.append("recommended: none (%s)" % result["reason"])
    lines.append("builds, newest first:")
    for build in result["builds"]:
        lines.append("  %-7s torch %-5s %-6s %s [%s]" % (FIT_WORD[build["fits"]], build["torch"], build["variant"],
                                                       _why(build), EVIDENCE_WORD[build["evidence"]]))
    return lines


def _host_lines(result: dict) -> "list[str]":
    driver = result["driver"]
    gpus = ", ".join(g["name"] + ("" if g.get("source") == "--gpu" else " (sm_%s)" % g["capability"].replace(".", ""))
                     for g in result["gpus"])
    release = ""
    if driver.get("release"):
        release = ", release %s%s" % (driver["release"], " assumed: the lowest that supports it"
                                      if driver.get("release_assumed") else "")
    if driver.get("cuda"):
        said = "CUDA %s (%s%s)" % (cuda_words(driver), driver.get("cuda_source"), release)
    elif driver.get("release"):
        said = "release %s, CUDA unknown (%s)" % (driver["release"], driver.get("cuda_source"))
    else:
        said = "none visible"
    return ["driver: " + said,
            "GPUs: %s" % (gpus or "none visible") + (MIXED if len(result["gpus"]) > 1 else ""),
            "toolkit: %s" % ("%s (%s)" % (result["toolkit"]["version"], result["toolkit"]["root"])
                             if result["toolkit"] else "none")]


def _extension_lines(build: dict) -> "list[str]":
    """Building extensions against the active toolkit: a line of its own, not a reason to reinstall."""
    item = build["extension_check"]
    return ["  extensions: %s%s" % (item["message"], " (%s)" % item["hint"] if item.get("hint") else "")]


def _short_reason(item: dict) -> str:
    """One failed check in a few words: which CUDA the driver lacks, which GPU has no code."""
    facts = item["facts"]
    if "driver_cuda" in facts and not facts["driver_cuda"]:  # older than every release the table has
        return "the driver is older than every CUDA cudaswitch knows"
    if "driver_cuda" in facts:  # the driver's CUDA against the build's
        return "the driver (CUDA %s) is too old for CUDA %s" % (facts.get("driver_cuda"), facts.get("cuda"))
    if "arch_list" not in facts:  # the driver's branch against the GPU: its own words
        return item["message"]
    sm = "sm_" + facts.get("capability", "").replace(".", "")
    return "no code for %s" % (sm if facts.get("gpu") == sm else "%s (%s)" % (facts.get("gpu"), sm))


def _installed_lines(result: dict) -> "list[str]":
    installed = result["installed"]
    if not installed:
        return []
    if installed.get("error") or installed.get("torch_error"):
        return ["installed: cannot ask %s about torch: %s" % (installed.get("python"),
                                                               installed.get("error") or installed.get("torch_error"))]
    if not installed.get("cuda"):
        return ["installed: torch %s in %s is a CPU-only build" % (installed["torch"], installed.get("python"))]
    verdict = {True: "fits this host", False: "does NOT fit this host",
               None: "cannot tell whether it fits"}[result["installed_fits"]]
    return ["installed: torch %s in %s %s (its own arch flags: %s)" % (
        installed["torch"], installed.get("python"), verdict,
        " ".join(installed.get("arch_flags") or []) or "none")]


def _why(build: dict) -> str:
    bad = [c for c in build["checks"] if c["level"] in ("error", "warning")]
    if build["fits"] is False:
        return "; ".join(dict.fromkeys(_short_reason(c) for c in bad if c["level"] == "error"))
    if not build["verified"]:
        return "cannot tell: no evidence for its arch list"
    notes = ["extensions: " + c["message"] for c in bad if c is build["extension_check"]]
    return "; ".join(["arch " + " ".join(build["arch"])] + notes)
