"""The driver and GPUs of the machine a plan is for when it is not this one: a node's `audit --json`
report (`torch --node`), or CUDASWITCH_DRIVER / CUDASWITCH_GPUS standing in for this host's wherever
they are judged (as CONDA_OVERRIDE_CUDA does for conda). An audit reads the real ones."""

import re

from cudaswitch.errors import UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

VARIABLES = ("CUDASWITCH_DRIVER", "CUDASWITCH_GPUS")
MAX_REPORT = 16 << 20
CUDA = re.compile(r"\d{1,2}\.\d{1,2}")
RELEASE = re.compile(r"\d{3,4}(\.\d{1,3}){1,2}")
GPU_SM = re.compile(r"^(?:sm_)?(\d+)(\d)$")
GPU_DOTTED = re.compile(r"^(\d+)\.(\d+)$")


def planned(env: "Mapping[str, str]") -> bool:
    return any(env.get(name) for name in VARIABLES)


def override(env: "Mapping[str, str]", facts: "dict | None") -> dict:
    """Driver facts with the variables' driver and GPUs in place of `facts` (this host's; None
    when only the variables are needed, CUDASWITCH_DRIVER being set)."""
    from cudaswitch.verify.torchdriver import parse_driver

    out = dict(facts or {"problems": [], "gpus": []})
    if env.get("CUDASWITCH_DRIVER"):
        out.update(_named("CUDASWITCH_DRIVER", parse_driver, env["CUDASWITCH_DRIVER"]), problems=[])
    if env.get("CUDASWITCH_GPUS"):
        texts = [t for t in env["CUDASWITCH_GPUS"].replace(" ", ",").split(",") if t]
        out["gpus"] = [dict(_named("CUDASWITCH_GPUS", parse_gpu, t), index=i, source="CUDASWITCH_GPUS")
                       for i, t in enumerate(texts)]
    return out


def parse_gpu(text: str) -> dict:
    """`--gpu sm_61` / `61` / `6.1` -> a device like the driver reports one."""
    value = text.strip().lower()
    match = GPU_SM.match(value) or GPU_DOTTED.match(value)
    if not match:
        raise UsageError("--gpu %r is not a compute capability" % text[:40], "give e.g. sm_61, sm_120 or 8.6")
    from cudaswitch.verify import facttables

    capability = "%d.%d" % (int(match.group(1)), int(match.group(2)))
    name = "sm_%d%d" % (int(match.group(1)), int(match.group(2)))
    if facttables.arch_row(name) is None:
        raise UsageError("--gpu %s is no GPU architecture cudaswitch knows" % name,
                         "give one of `cudaswitch facts`'s architectures, e.g. sm_61, sm_90 or sm_120")
    return {"name": name, "capability": capability, "source": "--gpu"}


def _named(variable: str, parse: "object", text: str) -> dict:
    """parse(text), its one-line error naming the variable instead of the option."""
    try:
        return parse(text)  # type: ignore[operator]
    except UsageError as exc:
        raise UsageError("%s=%s: %s" % (variable, text[:40], exc.message.split(": ", 1)[-1]), exc.hint) from None


def from_report(path: str) -> "tuple[dict, list[dict]]":
    """(driver facts, GPUs) of the node an `audit --json` report describes; one-line UsageError
    for a file that is not one."""
    from cudaswitch.safeio import Unreadable, read_regular

    try:
        import json  # only for --node: `torch`'s plan imports no json

        data = json.loads(read_regular(path, MAX_REPORT))
    except (OSError, Unreadable, ValueError) as exc:
        raise UsageError("--node %s: cannot read an `audit --json` report: %s" % (path, str(exc)[:80])) from None
    if not isinstance(data, dict) or data.get("kind") != "cudaswitch-audit":
        raise UsageError("--node %s: not an `audit --json` report (no kind cudaswitch-audit)" % path)
    driver, gpus = data.get("driver"), data.get("gpus")
    if not (driver is None or _driver_ok(driver)) or not isinstance(gpus, list) or not all(map(_gpu_ok, gpus)):
        raise UsageError("--node %s: its driver or gpus are malformed" % path, "make it with `cudaswitch audit --json`")
    facts: dict = {"present": False, "release": None, "cuda": None, "problems": [], "gpus": []}
    if driver:
        facts.update({k: driver.get(k) for k in ("present", "release", "cuda", "cuda_int", "branch")},
                     cuda_source="--node %s" % path)
    return facts, [dict(g, source="--node") for g in gpus if g.get("capability")]


def _driver_ok(driver: object) -> bool:
    return (isinstance(driver, dict) and driver.get("present") is True
            and all(value is None or isinstance(value, str) and pattern.fullmatch(value)
                    for value, pattern in ((driver.get("release"), RELEASE), (driver.get("cuda"), CUDA))))


def _gpu_ok(gpu: object) -> bool:
    return isinstance(gpu, dict) and (gpu.get("capability") is None or isinstance(gpu.get("capability"), str)
                                      and bool(CUDA.fullmatch(gpu["capability"])))
