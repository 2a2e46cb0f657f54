"""The driver and GPUs of the machine a plan is for when it is not this one: --driver / --gpu, a
node's `audit --json` report (`torch --node`), or CUDASWITCH_DRIVER / CUDASWITCH_GPUS standing in for
this host's wherever they are judged (as CONDA_OVERRIDE_CUDA does for conda); an audit reads the real
ones. Every --driver form is one release: 550.54 is itself, a branch (525) or a CUDA version (12.0)
its lowest release in driver_minimum, and a host whose libcuda tells only its CUDA version is read
the same way, so all give one answer. Whether a branch drives a GPU at all: torch_builds.toml's
driver_branch rows."""

import re

from cudaswitch.errors import UsageError
from cudaswitch.verify import facttables
from cudaswitch.verify.checkregistry import registered
from cudaswitch.verify.compat import check

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from cudaswitch.verify.checkregistry import CheckResult

VARIABLES = ("CUDASWITCH_DRIVER", "CUDASWITCH_GPUS")
MAX_REPORT = 16 << 20
CUDA = re.compile(r"\d{1,2}\.\d{1,2}")
RELEASE = re.compile(r"\d{3,4}(\.\d{1,3}){1,2}")
GPU_SM = re.compile(r"^(?:sm_)?(\d+)(\d)$")
GPU_DOTTED = re.compile(r"^(\d+)\.(\d+)$")
DRIVER_CUDA = re.compile(r"^\d{1,2}\.\d$")
BRANCH = re.compile(r"^\d{3,4}$")


def planned(env: "Mapping[str, str]") -> bool:
    return any(env.get(name) for name in VARIABLES)


def override(env: "Mapping[str, str]", facts: "dict | None") -> dict:
    """Driver facts with the variables' driver and GPUs in place of `facts` (this host's; None
    when only the variables are needed, CUDASWITCH_DRIVER being set)."""
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
    """(driver facts, GPUs) of the node an `audit --json` report describes, else a one-line UsageError."""
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


def parse_driver(text: str) -> dict:
    """`--driver` -> driver facts like driver.driver_facts' for another machine."""
    value = text.strip()
    if DRIVER_CUDA.match(value):
        row = facttables.driver_minimum(value)
        if not row:
            raise UsageError("--driver %s: no driver release this table knows supports CUDA %s" % (value, value),
                             "give the driver release, e.g. 550.54.14")
        return with_release({"present": True, "release_assumed": True}, row["driver"],
                            "--driver %s: the lowest release that supports it" % value)
    if BRANCH.match(value):  # the lowest release of the branch driver_minimum lists, else the bare branch
        rows = facttables.load()["driver_minimum"]
        listed = [r["driver"] for r in rows if facttables.release_tuple(r["driver"])[0] == int(value)]
        return with_release({"present": True, "release_assumed": True}, min(listed, key=facttables.release_tuple)
                            if listed else value, "--driver %s: the branch's lowest release" % value)
    if RELEASE.fullmatch(value):
        return with_release({"present": True}, value, "--driver release")
    raise UsageError("--driver %r is neither a driver release, a branch nor a CUDA version" % text[:40],
                     "give e.g. 550.54.14, 550 or 12.4")


def with_release(driver: dict, release: str, how: str) -> dict:
    derived = facttables.driver_cuda(release)
    return dict(driver, release=release, cuda=derived["cuda"], cuda_at_least=derived["cuda_at_least"],
                older_than=derived["older_than"], cuda_source=how, branch=facttables.release_tuple(release)[0])


def complete(driver: dict) -> dict:
    """A probed driver with its branch and release (when libcuda did not say, the lowest that supports its CUDA)."""
    if not driver.get("present") or not driver.get("cuda"):
        return driver
    if driver.get("release"):
        return dict(driver, branch=facttables.release_tuple(driver["release"])[0])
    row = facttables.driver_minimum(driver["cuda"])
    if not row:
        return driver
    return dict(driver, release=row["driver"], release_assumed=True, cuda=driver["cuda"],
                branch=facttables.release_tuple(row["driver"])[0])


@registered("torch_build.driver_gpu", layer="driver", shown_by=("torch",))
def driver_drives(driver: dict, gpu: dict) -> "CheckResult":
    """Can the driver's branch drive this GPU at all? An error names the branch it needs."""
    sm = "sm_" + gpu["capability"].replace(".", "")
    named = sm if gpu["name"] == sm else "%s (%s)" % (sm, gpu["name"])
    key, rows = gpu["capability"].replace(".", ""), facttables.torch_table().get("driver_branch") or []
    branch, row = driver.get("branch"), next((row for row in rows if key in row["sm"]), None)
    facts = {"gpu": gpu["name"], "capability": gpu["capability"], "branch": branch,
             "release": driver.get("release"), "rule": row}
    if not branch:
        return check("torch_build.driver_gpu", "info", "cannot tell whether the driver drives %s: its release "
                     "is unknown" % sm, "give --driver", **facts)
    if not row:
        return check("torch_build.driver_gpu", "ok", "no driver-branch bound is known for %s" % sm, **facts)
    weak = "" if row["evidence"] != "derived" else " (derived from the first toolkit for it, not stated by NVIDIA)"
    if row.get("first") and branch < int(row["first"]):
        return check("torch_build.driver_gpu", "error", "driver R%d cannot drive %s: it needs R%s or newer%s"
                     % (branch, named, row["first"], weak), "update the NVIDIA driver to R%s or newer"
                     % row["first"], needs_branch=row["first"], **facts)
    if row.get("last") and branch > int(row["last"]):
        return check("torch_build.driver_gpu", "error", "driver R%d no longer drives %s: R%s is the last "
                     "branch for it" % (branch, named, row["last"]), "use an R%s driver" % row["last"],
                     needs_branch=row["last"], **facts)
    return check("torch_build.driver_gpu", "ok", "driver R%d drives %s%s" % (branch, sm, weak), **facts)
