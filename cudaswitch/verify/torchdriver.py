"""The driver's side of `cudaswitch torch`: which release a `--driver` value stands for, and whether a
branch drives a GPU at all (torch_builds.toml's driver_branch rows). Every form is one release: 550.54
is itself, a branch (525) or a CUDA version (12.0) its lowest release in driver_minimum, and a host
whose libcuda tells only its CUDA version is read the same way, so all give one answer."""

import re

from cudaswitch.errors import UsageError
from cudaswitch.verify import facttables
from cudaswitch.verify.compat import check
from cudaswitch.verify.checkregistry import registered

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cudaswitch.verify.checkregistry import CheckResult

CUDA = re.compile(r"^\d{1,2}\.\d$")
BRANCH = re.compile(r"^\d{3,4}$")
RELEASE = re.compile(r"^\d{3,4}(\.\d{1,3}){1,2}$")


def parse_driver(text: str) -> dict:
    """`--driver` -> driver facts like driver.driver_facts' for another machine."""
    value = text.strip()
    if CUDA.match(value):
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
    if RELEASE.match(value):
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
