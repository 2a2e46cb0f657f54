"""The checks behind `use`'s one-line verdict (the slow path of quick.verdict_for_use)."""

import os

from cudaswitch.settings import USE_TORCH_TIMEOUT
from cudaswitch.verify import checkset
from cudaswitch.verify.compat import LEVELS, cuda_words, worst
from cudaswitch.verify.host import Host, settings

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from cudaswitch.paths import Paths
    from cudaswitch.verify.checkregistry import CheckResult


def use_verdict(paths: "Paths", record: dict, new_env: dict, timeout: "float | None") -> tuple:
    """(level, line, paths to watch): the verdict and what would make it stale. timeout None: the
    configured torch_timeout, capped at settings.USE_TORCH_TIMEOUT unless config.toml sets one explicitly."""
    conf = settings(paths, tolerant=True)
    host = Host(paths, None, new_env, record, timeout=timeout or conf["torch_timeout_set"] or USE_TORCH_TIMEOUT,
                conf=conf)
    checks = checkset.run(host, "use")
    level, line = summarize(record, checks, host)
    return level, line, _watch(host.torch, host.python)


MAX_LINE = 100
TAIL = " (`cudaswitch verify`)"


def summarize(record: dict, checks: "list[CheckResult]", host: "Host") -> tuple:
    """(level, line): at most MAX_LINE characters. An ok line always says whether a driver is here:
    "CUDA 13.1: ok" alone would read as "it runs" on a host without one."""
    level = worst(checks)
    head = "CUDA %s" % (record.get("version") or "?")
    bad = sorted((c for c in checks if c["level"] in ("warning", "error")), key=lambda c: -LEVELS.index(c["level"]))
    if bad:
        more = " (+%d more)" % (len(bad) - 1) if len(bad) > 1 else ""
        start = "%s: %s: " % (head, level)
        line = start + fit(line_text(bad[0]), MAX_LINE - len(start) - len(more)) + more
        line += TAIL if len(line) + len(TAIL) <= MAX_LINE else ""
        return level, line
    drv = host.driver
    parts = ["driver CUDA %s" % cuda_words(drv) if drv.get("cuda") else "no NVIDIA driver here"]
    if any(c["level"] == "ok" and c["facts"].get("built") is True for c in checks):  # the real build
        parts.append("builds with nvcc")
    chosen = [c for c in checks if c["facts"].get("chosen") and c["facts"].get("compiler")]  # the host compiler
    if chosen:
        parts.append("host compiler %s" % os.path.basename(chosen[0]["facts"]["compiler"]))
    if host.torch.get("torch"):
        parts.append("torch %s" % host.torch["torch"])
    return level, fit("%s: ok (%s)" % (head, ", ".join(parts)), MAX_LINE)


def line_text(item: "CheckResult") -> str:
    """A check's words for the one line: its own short form, else its message up to the first
    ": " when the whole is long (the rest explains; `verify` shows it)."""
    text = short_paths(item["facts"].get("line") or item["message"])
    if len(text) > MAX_LINE // 2 and ": " in text and not item["facts"].get("line"):
        text = text.split(": ", 1)[0]
    return text


def short_paths(text: str) -> str:
    """Absolute paths shortened to their last two parts: the report has them whole."""
    import re

    return re.sub(r"/(?:[^\s/:;,()']+/)+([^\s/:;,()']+/[^\s/:;,()']+)", r".../\1", text)


def fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[:max(width - 3, 0)].rstrip() + "..."


def _watch(probe: dict, python: "str | None") -> "list[str]":
    """sys.path dirs and torch's dir: installing or removing a package changes their mtime."""
    watch = list(probe.get("site_dirs") or [])
    if probe.get("torch_dir"):
        watch.append(probe["torch_dir"])
    if probe.get("python"):
        watch.append(os.path.realpath(probe["python"]))
    return watch
