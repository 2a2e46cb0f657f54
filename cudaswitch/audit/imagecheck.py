"""Will an image start on a host: its NVIDIA_REQUIRE_* conditions judged as the NVIDIA container
runtime judges them, and the torch inside it against the host's GPUs and driver.

The runtime's rules (libnvidia-container's dsl, nvidia-container-toolkit's image env): every
NVIDIA_REQUIRE_* but _JETPACK must hold; CUDA_VERSION without NVIDIA_REQUIRE_CUDA requires
`cuda>=MAJOR.MINOR`; NVIDIA_DISABLE_REQUIRE (true, 1, t) turns the check off. Space-separated
alternatives are ORed, comma-separated terms ANDed; a term is KEY OP VALUE (keys cuda, driver, arch,
brand; versions compare number by number); a malformed one refuses the container. Where the runtime
assumes an unreadable fact is fine, this says "cannot tell" (None): never ok on a guess.
"""

import operator
from typing import TYPE_CHECKING, List, Mapping, Optional, Sequence, Tuple

from cudaswitch.verify import facttables
from cudaswitch.verify.compat import check, cuda_words
from cudaswitch.verify.checkregistry import registered

if TYPE_CHECKING:
    from cudaswitch.verify.checkregistry import CheckResult

    Term = Tuple[str, str, str]  # (key, op, value)

OPERATORS = {"=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
             ">=": operator.ge}
KEYS = ("cuda", "driver", "arch", "brand")
TRUE_WORDS = ("1", "t", "T", "TRUE", "true", "True")  # Go's strconv.ParseBool, as the toolkit reads it
VERSION_CHARS = set("0123456789.")


class Invalid(ValueError):
    """A condition the runtime refuses as an invalid expression."""


def requirements(env: Mapping[str, str]) -> List[Tuple[str, str]]:
    """[(variable, condition)] the runtime checks for an image's Env; [] when disabled."""
    found = [(key, value) for key, value in sorted(env.items())
             if key.startswith("NVIDIA_REQUIRE_") and key != "NVIDIA_REQUIRE_JETPACK" and value.strip()]
    if "NVIDIA_REQUIRE_CUDA" not in env and env.get("CUDA_VERSION"):
        pieces = env["CUDA_VERSION"].split(".")
        found.append(("CUDA_VERSION", "cuda>=%s" % ".".join(pieces[:2])))
    return found


def parse_term(text: str) -> "Term":
    """'driver>=535' -> ('driver', '>=', '535'), as the runtime splits it."""
    cut = next((i for i, c in enumerate(text) if c in "<>=!"), None)
    if not cut:
        raise Invalid("%r has no KEY OP VALUE" % text[:40])
    end = cut
    while end < len(text) and text[end] in "<>=!":
        end += 1
    key, op, value = text[:cut].lower(), text[cut:end], text[end:]
    if key not in KEYS or op not in OPERATORS or not value:
        raise Invalid("%r is not a condition the runtime knows" % text[:40])
    if key != "brand" and not set(value) <= VERSION_CHARS:
        raise Invalid("%r compares a version with %r" % (text[:40], value[:20]))
    if key == "brand" and op not in ("=", "!="):
        raise Invalid("%r: a brand compares with = or != only" % text[:40])
    return key, op, value


def alternatives(condition: str) -> "List[List[Term]]":
    """'a,b c' -> [[term a, term b], [term c]]; Invalid when any term is malformed."""
    return [[parse_term(t) for t in alt.split(",") if t] for alt in condition.split(" ") if alt.strip(",")]


def compare_versions(have: str, op: str, want: str) -> bool:
    """The runtime's comparison: number by number; '12.4' = '12.4.0'."""
    a, b = (tuple(int(p) for p in text.split(".") if p) for text in (have, want))
    width = max(len(a), len(b))
    return OPERATORS[op](a + (0,) * (width - len(a)), b + (0,) * (width - len(b)))


def judge_term(term: "Term", driver: dict, gpu: Optional[dict]) -> Tuple[Optional[bool], str]:
    """(True | False | None, what was compared) for one term on one GPU (or None: no GPU known)."""
    key, op, value = term
    if key in ("cuda", "driver"):
        have = driver.get("cuda") if key == "cuda" else driver.get("release")
        if not have or not set(have) <= VERSION_CHARS:
            return None, "the driver's %s is not known" % ("CUDA version" if key == "cuda" else "release")
        if key == "cuda" and driver.get("cuda_at_least") and op in (">", ">=", "=") \
                and not compare_versions(have, op, value):
            return None, "the driver supports CUDA %s" % cuda_words(driver)  # it may support a newer one
        return compare_versions(have, op, value), "%s %s" % ("the driver supports CUDA" if key == "cuda" else
                                                              "the driver is", have)
    if gpu is None or (key == "arch" and not gpu.get("capability")):
        return None, "no GPU %s is known" % ("compute capability" if key == "arch" else "brand")
    if key == "arch":
        return compare_versions(gpu["capability"], op, value), "GPU %s is sm %s" % (_gpu_name(gpu), gpu["capability"])
    brand = gpu.get("brand")
    if not brand:
        return None, "the brand of GPU %s is not known (NVML is not asked)" % _gpu_name(gpu)
    same = brand.lower() == value.lower()
    return (same if op == "=" else not same), "GPU %s is %s" % (_gpu_name(gpu), brand)


def _gpu_name(gpu: dict) -> str:
    return gpu.get("name") or gpu.get("model") or "?"


def _all(values: Sequence[Optional[bool]]) -> Optional[bool]:
    return False if False in values else (None if None in values else True)


def judge_condition(condition: str, driver: dict, gpus: Sequence[Optional[dict]]) -> dict:
    """{"ok": True | False | None, "unmet", "unknown"} for one condition on every visible GPU."""
    alts = alternatives(condition)
    unmet: List[str] = []
    unknown: List[str] = []
    per_gpu: List[Optional[bool]] = []
    for gpu in gpus or [None]:
        results: List[Optional[bool]] = []
        for alt in alts:
            verdicts = [(term, judge_term(term, driver, gpu)) for term in alt]
            results.append(_all([v[0] for _t, v in verdicts]))
            for term, (value, why) in verdicts:
                line = "%s%s%s (%s)" % (term[0], term[1], term[2], why)
                bucket = unmet if value is False else unknown if value is None else None
                if bucket is not None and line not in bucket:
                    bucket.append(line)
        per_gpu.append(True if not alts or True in results else None if None in results else False)
    return {"ok": _all(per_gpu), "unmet": unmet, "unknown": unknown}


def judge_image(env: Mapping[str, str], driver: dict, gpus: Sequence[dict]) -> dict:
    """The runtime's verdict on an image's Env: {"verdict": ok | cannot run | cannot tell | not checked, ...}."""
    conditions = requirements(env)
    if env.get("NVIDIA_DISABLE_REQUIRE", "") in TRUE_WORDS:
        return {"verdict": "not checked", "ok": True, "conditions": [], "disabled": True,
                "message": "NVIDIA_DISABLE_REQUIRE is set: the runtime checks no requirement"}
    judged: List[dict] = []
    for variable, condition in conditions:
        try:
            result = judge_condition(condition, driver, gpus)
        except Invalid as exc:
            result = {"ok": False, "unmet": ["invalid expression: %s" % exc], "unknown": [], "invalid": True}
        judged.append(dict(result, variable=variable, condition=condition))
    ok = _all([c["ok"] for c in judged])
    verdict = {True: "ok", False: "cannot run", None: "cannot tell"}[ok]
    return {"verdict": verdict, "ok": ok, "conditions": judged, "disabled": False,
            "message": _message(verdict, judged, driver)}


def _message(verdict: str, judged: List[dict], driver: dict) -> str:
    if not judged:
        return "the image states no NVIDIA_REQUIRE_CUDA or CUDA_VERSION: the runtime checks nothing"
    where = "driver %s (CUDA %s)" % (driver.get("release") or "?", driver.get("cuda") or "?")
    if verdict == "ok":
        return "%s meets %s" % (where, "; ".join(c["condition"] for c in judged))
    if verdict == "cannot run":
        unmet = [u for c in judged if c["ok"] is False for u in c["unmet"]]
        return "cannot start on %s: unmet %s%s" % (where, "; ".join(unmet), _minimum_hint(judged))
    unknown = [u for c in judged if c["ok"] is None for u in c["unknown"]]
    return "cannot tell whether it starts on %s: %s" % (where, "; ".join(unknown))


def _minimum_hint(judged: List[dict]) -> str:
    """'cuda>=12.4' unmet: the driver compat.toml says CUDA 12.4 needs."""
    for condition in judged:
        for alt in condition["condition"].split(" "):
            if alt.startswith("cuda>=") and "," not in alt:
                row = facttables.driver_minimum(alt[len("cuda>="):])
                if row:
                    return " (CUDA %s needs driver >= %s)" % (row["cuda"], row["driver"])
    return ""


def build_row(torch_version: str, cuda: Optional[str]) -> Optional[dict]:
    """torch_builds.toml's row for a torch release and its CUDA ('2.4.1+cu124', '12.4'), or None."""
    from cudaswitch.toolkit import version_tuple
    from cudaswitch.verify import torchplan

    if not cuda:
        return None
    release, short = version_tuple(torch_version.split("+")[0])[:2], version_tuple(cuda)[:2]
    for row in torchplan.builds():
        if version_tuple(row["torch"])[:2] == release and version_tuple(row["cuda"])[:2] == short:
            return row
    return None


@registered("image.torch_cuda", "image.torch_driver", "image.torch_arch", layer="framework", shown_by=("image",))
def torch_checks(torch: dict, driver: dict, gpus: Sequence[dict]) -> "List[CheckResult]":
    """The image's torch against the driver (its CUDA) and each GPU (its arch list, where known)."""
    from cudaswitch.verify.checks import arch_in_build
    from cudaswitch.verify.compat import driver_supports

    subject = "the image's torch %s" % torch["version"]
    if not torch["cuda"]:
        return [check("image.torch_cuda", "info", "%s is a CPU-only build" % subject, torch=torch["version"])]
    # CheckResults copied (dict() keeps their keys, not their type)
    out: list = [dict(driver_supports(driver, torch["cuda"], "image.torch_driver", subject))]
    for gpu in gpus:
        if not gpu.get("capability"):
            continue
        if not torch["arch"]:
            out.append(check("image.torch_arch", "info", "%s: its GPU code list is not known here, so %s cannot "
                              "be checked" % (subject, _gpu_name(gpu)), torch=torch["version"]))
            continue
        verdict = arch_in_build(gpu, torch["arch"], {"torch": torch["version"], "arch_source": torch["arch_source"]})
        out.append(dict(verdict, id="image.torch_arch"))
    return out
