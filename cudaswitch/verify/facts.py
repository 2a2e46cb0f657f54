"""cudaswitch/data/compat.toml, loaded once, and the lookups verdicts need from it."""

import functools
import sys
from importlib import resources

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


def torch_builds_for(capability):
    """CUDA versions of torch builds whose compiled architectures include `capability` ('6.1'), newest
    first (a GPU runs SASS of its own major with a lower or equal minor)."""
    have = version_tuple(capability)[:2]
    fits = [r["cuda"] for r in load().get("torch_arch", [])
            if version_tuple(r["first"])[:2] <= have and have[0] <= version_tuple(r["last"])[0]]
    return sorted(fits, key=version_tuple, reverse=True)


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
