"""cudaswitch/data/compat.toml and torch_builds.toml, loaded once, and the lookups verdicts need.

torch_builds.toml is the one table of PyPI torch builds and the GPU code each holds. It is checked
as it loads: a row without an evidence kind and a known source, a kind without the fields that make
it checkable (a wheel's file name and sha256, a script's path and commit, a PR, a URL), or a second
row for the same build stops the program rather than letting a guess pass for a fact.
"""

import functools
import re
import sys
from importlib import resources

from cudaswitch.errors import CudaSwitchError
from cudaswitch.toolkit import version_tuple

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib


@functools.lru_cache(maxsize=1)
def load():
    return tomllib.loads(resources.files("cudaswitch.data").joinpath("compat.toml").read_text("utf-8"))


def release_tuple(text):
    """'535.129.03' -> (535, 129, 3); a driver release compares numerically part by part."""
    return tuple(int(p[:9]) for p in (text or "").split(".") if p.isascii() and p.isdigit())


def driver_minimum(cuda):
    """The table-1 row for CUDA 'x.y' (minimum Linux driver of its GA release), or None."""
    short = version_tuple(cuda)[:2]
    for row in load()["driver_minimum"]:
        if version_tuple(row["cuda"]) == short:
            return row
    return None


def cuda_for_driver(release):
    """Newest CUDA 'x.y' whose GA minimum the driver release meets (when libcuda cannot say)."""
    have = release_tuple(release)
    fits = [r["cuda"] for r in load()["driver_minimum"] if release_tuple(r["driver"]) <= have]
    return max(fits, key=version_tuple) if fits else None


def minor_compat(major):
    for row in load()["minor_compat"]:
        if row["major"] == major:
            return row
    return None


def gcc_ceiling(cuda):
    """(newest gcc major, row) from compat.toml's gcc_ceiling rows for a toolkit version, or (None, None)."""
    have = version_tuple(cuda)
    for row in load()["gcc_ceiling"]:
        low, high = version_tuple(row["cuda_from"]), version_tuple(row["cuda_to"])
        if low <= have[:len(low)] and have[:len(high)] <= high:
            return row["gcc"], row
    return None, None


def torch_builds(torch_version):
    """The table-5 row for a torch release ('2.4.1+cu124' -> the 2.4 row), or None."""
    short = ".".join(str(n) for n in version_tuple(torch_version.split("+")[0])[:2])
    for row in load()["torch_build"]:
        if short in row["torch"]:
            return row
    return None


def arch_row(sm):
    """The table-6 row for 'sm_86' / '86' / '8.6'."""
    key = sm.replace("sm_", "").replace("compute_", "").replace(".", "")
    for row in load()["arch"]:
        if key in row["sm"]:
            return row
    return None


# What makes each kind of evidence checkable; "none" is a build known to exist (its source says
# so) whose arch list nobody has confirmed: cudaswitch cannot tell whether it fits.
EVIDENCE = {"wheel": ("wheel", "sha256"), "build-script": ("path", "commit"), "release-pr": ("pr",),
            "published": ("url",), "none": ()}
PLATFORMS = ("linux-x86_64", "linux-aarch64", "windows")
ARCH_NAME = re.compile(r"^(sm|compute)_\d{2,3}[af]?$")
RELEASE_NAME = re.compile(r"^\d+\.\d+$")


class TableError(CudaSwitchError):
    """A data table that breaks its own rules (a packaging or editing mistake)."""


@functools.lru_cache(maxsize=1)
def torch_table():
    text = resources.files("cudaswitch.data").joinpath("torch_builds.toml").read_text("utf-8")
    return parse_torch_table(text, "torch_builds.toml")


def parse_torch_table(text, where="torch table"):
    """The parsed table, every build row checked (see the module's docstring)."""
    data = tomllib.loads(text)
    sources, seen = data.get("sources") or {}, set()
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


def _check_build(row, sources, where):
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


def torch_rows(platform="linux-x86_64"):
    return [r for r in torch_table()["build"] if r["platform"] == platform]


def newest_torch_known(platform="linux-x86_64"):
    """The newest torch release the table has any row for ('2.15')."""
    return max((r["torch"] for r in torch_rows(platform)), key=version_tuple, default=None)


def runs_on(capability, arch_list):
    """Does code in `arch_list` run on a GPU of `capability` ('6.1')? Plain SASS runs on its major at
    an equal or higher minor, plain PTX on any equal or higher capability; family code (sm_100f)
    on its major at an equal or higher minor; arch-specific code (sm_90a) on that arch only."""
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


def torch_builds_for(capability, platform="linux-x86_64"):
    """(torch, cuda) of evidence-backed builds with code for `capability` ('6.1'), newest first."""
    rows = [r for r in torch_rows(platform) if r["evidence"] != "none" and runs_on(capability, r["arch"])]
    rows.sort(key=lambda r: (version_tuple(r["torch"]), version_tuple(r["cuda"])), reverse=True)
    return [(r["torch"], r["cuda"]) for r in rows]


def error_rules():
    return load()["error"]


def cudnn_version_string(value):
    """torch.backends.cudnn.version() -> '9.1.0'. cuDNN's encoding: MAJOR*1000+MINOR*100+PATCH up to
    v8 (8907 = 8.9.7), MAJOR*10000+MINOR*100+PATCH from v9 (90100 = 9.1.0, 91000 = 9.10.0)."""
    if not isinstance(value, int) or value <= 0:
        return None
    scale = 10000 if value >= 90000 else 1000
    major, rest = divmod(value, scale)
    return "%d.%d.%d" % (major, rest // 100, rest % 100)
