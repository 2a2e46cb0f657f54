"""`audit --image`: a container image's audit report and whether it starts on this host (or the
driver and GPUs given); `audit merge --image`: on which nodes it starts. The audit of a root runs
on a private temporary view of the image's files with the image's own PATH and toolkit variables;
nothing from the image is run, and the report's paths are the image's own.
"""

import os
import re
import tempfile
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Sequence, Tuple

from cudaswitch.audit import imagecheck, layers, oci, view
from cudaswitch.audit.hosts import fold
from cudaswitch.verify import checkregistry
from cudaswitch.verify.compat import check
from cudaswitch.verify.checkregistry import registered

if TYPE_CHECKING:
    from cudaswitch.audit.inventory import Progress
    from cudaswitch.verify.checkregistry import CheckResult

TORCH_VERSION = re.compile(r"""^__version__\s*(?::[^=]*)?=\s*['"]([^'"]{1,64})['"]""", re.M)
TORCH_CUDA = re.compile(r"""^cuda\s*(?::[^=]*)?=\s*['"]([0-9.]{1,16})['"]""", re.M)
SITE_DIRS = ("site-packages", "dist-packages")
CUDA_ONLY = re.compile(r"^\d{1,2}\.\d$")


def target_facts(env: dict, driver_text: Optional[str] = None,
                 gpu_texts: Optional[Sequence[str]] = ()) -> Tuple[dict, List[dict]]:
    """(driver, gpus) an image is judged against: --driver / --gpu, else this host's."""
    from cudaswitch.verify.target import parse_driver, parse_gpu

    driver = parse_driver(driver_text) if driver_text else None
    gpus = [parse_gpu(g) for g in gpu_texts or ()]
    if driver is None or not gpus:
        from cudaswitch.paths import Paths
        from cudaswitch.verify.driver import driver_facts

        host = driver_facts(Paths(env), env)
        driver, gpus = driver or host, gpus or host["gpus"]
    driver = dict(driver)
    if driver_text and CUDA_ONLY.match(driver_text.strip()):
        driver["release"] = None  # `--driver 12.4` says which CUDA, not which release: driver terms are unknown
    driver.setdefault("gpus", gpus)
    driver.setdefault("problems", [])
    return driver, gpus


def read_image(text: str, progress: "Optional[Progress]" = None) -> Tuple[dict, dict, layers.Tree]:
    """(reference, image facts, tree) with every layer applied and its digest checked."""
    progress = progress or (lambda label, done, total: None)
    ref = oci.parse_reference(text)
    store, image = oci.open_image(ref)
    try:
        tree = layers.Tree()
        layers.apply_layers(tree, image["layers"], progress)
    finally:
        store.close()
    return ref, image, tree


def audit_image(env: dict, text: str, driver_text: Optional[str] = None, gpu_texts: Optional[Sequence[str]] = (),
                progress: "Optional[Progress]" = None) -> dict:
    """`audit --json`'s shape for the image's files plus "image"; the judged driver stands where a host's would."""
    driver, gpus = target_facts(env, driver_text, gpu_texts)
    ref, image, tree = read_image(text, progress)
    report, shape = _audit_view(env, ref, image, tree, progress)
    torches = find_torch(tree)
    facts = image_facts(ref, image, torches, shape)
    facts["requirement"], torch_checks, facts["runs"] = _verdict(image, torches, driver, gpus)
    _rejudge(report, driver, gpus)
    report["checks"] += [_requirement_check(facts["requirement"])] + torch_checks
    report["image"] = facts
    return report


def image_facts(ref: dict, image: dict, torches: List[dict], shape: Optional[dict] = None) -> dict:
    config = image["config_facts"]
    return {"reference": ref["text"], "transport": ref["transport"], "path": ref["path"], "tag": ref["tag"],
            "manifest_digest": image["manifest_digest"], "config_digest": image["config_digest"],
            "architecture": config["architecture"], "os": config["os"], "variant": config["variant"],
            "created": config["created"], "env": config["env"], "layers": len(image["layers"]),
            "os_release": shape.pop("os_release", {}) if shape else {}, "torch": torches, "view": shape}


def _audit_view(env: dict, ref: dict, image: dict, tree: layers.Tree,
                progress: "Optional[Progress]") -> Tuple[dict, dict]:
    """run_audit on a fresh view of the tree, which is removed before this returns."""
    from cudaswitch.audit.inventory import run_audit

    with tempfile.TemporaryDirectory(prefix="cudaswitch-image-", ignore_cleanup_errors=True) as work:
        try:
            shape: Dict[str, Any] = view.write_view(tree, work)  # os_release joins the counts below
        except OSError as exc:  # the host refuses what the image holds (a name or link too long for it)
            raise oci.ImageError("the image's files cannot be laid out for the audit (%s)" % (
                exc.strerror or exc)) from None
        clean = {k: v for k, v in env.items() if k not in ("MODULEPATH", "CUDASWITCH_LIBCUDA", "CUDASWITCH_ROOT")}
        own = dict(image["config_facts"]["env"])
        if "PATH" in own:
            own["PATH"] = ":".join([p for p in own["PATH"].split(":") if p.startswith("/")][:64]) or "/usr/bin:/bin"
        root_vars = {k: v for k, v in own.items() if v.startswith("/") and len(v) < 4096}
        report = _unhost(run_audit(clean, root=work, progress=progress, root_vars=root_vars), work)
        shape["os_release"] = os_release(work)
    for entry in report["toolkits"]:
        entry["size_bytes"] = layers.size_under(tree, entry.get("real") or entry["root"])
    report["host"], report["root"] = ref["text"], "/"
    return report, shape


def _unhost(value: Any, work: str) -> Any:
    if isinstance(value, str):
        return value.replace(work + "/", "/").replace(work, "/")
    if isinstance(value, list):
        return [_unhost(v, work) for v in value]
    if isinstance(value, dict):
        return {k: _unhost(v, work) for k, v in value.items()}
    return value


def find_torch(tree: layers.Tree) -> List[dict]:
    """Each torch in a site-packages of the image, with its build's arch list where torch_builds.toml knows it."""
    found: List[dict] = []
    stack: List[Tuple[tuple, layers.Node]] = [((), tree.root)]
    while stack:
        parts, node = stack.pop()
        for name, child in sorted(node.children.items()):
            if child.kind != "dir":
                continue
            if name in SITE_DIRS:
                item = _torch_at(parts + (name,), child)
                if item:
                    found.append(item)
            stack.append((parts + (name,), child))
    return sorted(found, key=lambda t: t["site"])


def _torch_at(site: Tuple[str, ...], node: layers.Node) -> Optional[dict]:
    torch = node.children.get("torch")
    version_file = torch.children.get("version.py") if torch is not None and torch.kind == "dir" else None
    if version_file is None or version_file.kind != "file" or not version_file.data:
        return None
    text = version_file.data.decode("utf-8", "replace")
    version, cuda = TORCH_VERSION.search(text), TORCH_CUDA.search(text)
    if not version:
        return None
    item: Dict[str, Any] = {
        "version": version.group(1), "cuda": cuda.group(1) if cuda else None, "site": "/" + "/".join(site),
        "arch": None, "arch_source": None, "arch_verified": None}
    row = imagecheck.build_row(item["version"], item["cuda"])
    if row:
        item.update(arch=list(row["arch"]), arch_source=row.get("source"), arch_verified=row.get("verified", True))
    return item


def os_release(work: str) -> Dict[str, str]:
    from cudaswitch.safeio import read_or_none

    for name in ("etc/os-release", "usr/lib/os-release"):
        data = read_or_none(os.path.join(work, name), 1 << 16)
        if data is not None:
            pairs = (line.partition("=") for line in data.decode("utf-8", "replace").splitlines())
            return {k: v.strip().strip("\"'")[:200] for k, _, v in pairs if k in ("ID", "VERSION_ID", "PRETTY_NAME")}
    return {}


def rejudged_ids() -> set:
    """Checks of the view's audit the image's report drops: the driver layer (judged again against
    the host or --driver, not the view) and those `audit --image` does not show."""
    from cudaswitch.audit import inventory  # noqa: F401  (registers the audit's own checks)
    from cudaswitch.verify import checkset  # noqa: F401  (registers verify's)

    audit = checkregistry.ids_for("audit")
    return (audit - checkregistry.ids_for("image")) | {i for i in audit if checkregistry.BY_ID[i].layer == "driver"}


@registered("image.no_exec", layer="toolkit", shown_by=("image",))
def _rejudge(report: dict, driver: dict, gpus: List[dict]) -> None:
    """The image's toolkits against the judged driver, which is the host's, not the view's."""
    from cudaswitch.audit.inventory import driver_verdict

    report["driver"], report["gpus"] = (driver if driver.get("present") else None), gpus
    dropped = rejudged_ids()
    report["checks"] = [c for c in report["checks"] if c["id"] not in dropped]
    for entry in report["toolkits"]:
        entry["driver_supported"], entry["driver_check"] = driver_verdict(driver, entry)
        if entry["driver_check"] and entry["driver_check"]["level"] in ("warning", "error"):
            report["checks"].append(entry["driver_check"])
    report["checks"].append(check("image.no_exec", "info", "read from the image's files; nothing in the image "
                                  "was run"))


@registered("image.require_cuda", layer="driver", shown_by=("image",))
def _requirement_check(requirement: dict) -> "CheckResult":
    level = {"ok": "ok", "not checked": "info", "cannot tell": "info"}.get(requirement["verdict"], "error")
    return check("image.require_cuda", level, requirement["message"],
                 "a newer driver, or an image built for an older CUDA" if level == "error" else None,
                 verdict=requirement["verdict"], conditions=requirement["conditions"])


def _verdict(image: dict, torches: List[dict], driver: dict,
             gpus: List[dict]) -> "Tuple[dict, List[CheckResult], Optional[bool]]":
    """(the runtime's requirement, the torch checks, whether the image starts: not when either fails)."""
    requirement = imagecheck.judge_image(image["config_facts"]["env"], driver, gpus)
    checks = [c for t in torches for c in imagecheck.torch_checks(t, driver, gpus)]
    return requirement, checks, False if any(c["level"] == "error" for c in checks) else requirement["ok"]


def on_nodes(text: str, nodes: Iterable[dict], progress: "Optional[Progress]" = None) -> dict:
    """Which merged nodes can start the image: can_run, cannot_run, cannot_tell ({host, reasons}), hostlists."""
    ref, image, tree = read_image(text, progress)
    torches = find_torch(tree)
    groups: Dict[str, List[dict]] = {"can_run": [], "cannot_run": [], "cannot_tell": []}
    for node in nodes:
        driver = {"present": bool(node["driver"] or node["driver_cuda"]), "release": node["driver"],
                  "cuda": node["driver_cuda"]}
        gpus = [{"name": model, "capability": capability} for model, capability, _count in node["gpus"]]
        requirement, checks, runs = _verdict(image, torches, driver, gpus)
        groups[{True: "can_run", False: "cannot_run", None: "cannot_tell"}[runs]].append(
            {"host": node["host"], "reasons": _reasons(requirement, checks, runs)})
    out = {"image": image_facts(ref, image, torches), **groups}
    for key in groups:
        out[key + "_hosts"] = fold(item["host"] for item in groups[key])
    return out


def _reasons(requirement: dict, checks: "List[CheckResult]", runs: Optional[bool]) -> List[str]:
    """Why a node cannot start the image (or why it cannot be told): the verdicts' own lines."""
    if runs is True:
        return []
    lines = [requirement["message"]] if requirement["ok"] is runs else []
    if runs is False:
        lines += [c["message"] for c in checks if c["level"] == "error"]
    return lines
