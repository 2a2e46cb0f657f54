"""The shape `audit merge` reads from a report, checked before it is folded in: a stranger's report
is refused with one line, never a traceback; every string and number kept is bounded."""

import re

from cudaswitch.audit.inventory import REPORT_FORMAT, REPORT_KIND
from cudaswitch.toolkit import STATUSES

VERSION = re.compile(r"[0-9]{1,9}(\.[0-9]{1,9}){0,4}")
CAPABILITY = re.compile(r"[0-9]{1,3}\.[0-9]{1,3}")
MAX_TEXT = 4096  # longest string merge keeps from a report (names, paths)
TRACKED = ("cudnn", "nccl", "cupti")  # libraries a multi-node job needs on every node


class BadReport(ValueError):
    """One line saying why a report was refused."""


def validate(report: object) -> dict:
    """The report if it has the shape merge reads, else BadReport naming what is wrong."""
    if not isinstance(report, dict):
        raise BadReport("not an audit report (a JSON %s, not an object)" % _json_type(report))
    if report.get("kind", REPORT_KIND) != REPORT_KIND:
        raise BadReport("not an audit report (kind %s)" % _quote(report["kind"]))
    version = report.get("format", REPORT_FORMAT)
    if type(version) is not int or version > REPORT_FORMAT:
        raise BadReport("report format %s is not one this cudaswitch reads (%d)" % (_quote(version), REPORT_FORMAT))
    host = report.get("host")
    if not isinstance(host, str) or not host or len(host) > 255 or not host.isprintable():
        raise BadReport("not an audit report (no \"host\" that is a host name)")
    for key, kinds in (("toolkits", list), ("driver", (dict, type(None))), ("gpus", (list, type(None))),
                       ("root", (str, type(None)))):
        if not isinstance(report.get(key), kinds):
            raise BadReport("not an audit report (\"%s\" is a JSON %s)" % (key, _json_type(report.get(key))))
    for key in ("release", "cuda"):
        value = (report.get("driver") or {}).get(key)
        if value is not None and not _is_version(value):
            raise BadReport("driver %s %s is not a version" % (key, _quote(value)))
    for index, gpu in enumerate(report.get("gpus") or []):
        _validate_gpu(index, gpu)
    for index, entry in enumerate(report["toolkits"]):
        _validate_toolkit(index, entry)
    _validate_net(report)
    return report


def _validate_net(report: dict) -> None:
    """"nccl" and "interfaces" (absent from older reports): bounded strings, versions, MTUs."""
    for key, fields in (("nccl", {"path": str, "version": str}), ("interfaces", {"name": str, "mtu": int,
                                                                                "state": str})):
        items = report.get(key)
        if items is None:
            continue
        if not isinstance(items, list) or len(items) > 1024:
            raise BadReport("\"%s\" is not a list of at most 1024 entries" % key)
        for index, item in enumerate(items):
            bad = not isinstance(item, dict) or any(
                item.get(f) is not None and (type(item[f]) is not kind or len(str(item[f])) > 255) for f, kind in
                fields.items())
            if bad or (key == "nccl" and item.get("version") is not None and not _is_version(item["version"])):
                raise BadReport("%s %d is not an object of %s" % (key, index, ", ".join(fields)))


def _json_type(value: object) -> str:
    names = {bool: "boolean", int: "number", float: "number", str: "string", list: "array", dict: "object"}
    return names.get(type(value), "null")


def _quote(value: object, limit: int = 40) -> str:
    """A short, escaped prefix of a refused value: an error never echoes a whole stranger's file."""
    text = repr(value) if isinstance(value, (str, int, float, bool, type(None))) else "a JSON %s" % _json_type(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _is_version(value: object) -> bool:
    return isinstance(value, str) and VERSION.fullmatch(value) is not None


def _validate_gpu(index: int, gpu: object) -> None:
    if not isinstance(gpu, dict):
        raise BadReport("gpu %d is a JSON %s, not an object" % (index, _json_type(gpu)))
    for key in ("name", "model"):
        if not isinstance(gpu.get(key), (str, type(None))) or len(gpu.get(key) or "") > 255:
            raise BadReport("gpu %d has a \"%s\" that is not a GPU name" % (index, key))
    capability = gpu.get("capability")
    if capability is not None and not (isinstance(capability, str) and CAPABILITY.fullmatch(capability)):
        raise BadReport("gpu %d has a \"capability\" that is not major.minor: %s" % (index, _quote(capability)))


def _validate_toolkit(index: int, entry: object) -> None:
    if not isinstance(entry, dict) or entry.get("status") not in STATUSES:
        raise BadReport("toolkit %d has no valid \"status\"" % index)
    version = entry.get("version")
    if version is not None and not _is_version(version):
        raise BadReport("toolkit %d has a \"version\" that is not a CUDA version: %s" % (index, _quote(version)))
    root = entry.get("root")
    if not isinstance(root, (str, type(None))) or len(root or "") > MAX_TEXT:
        raise BadReport("toolkit %d has a \"root\" that is not a path" % index)
    if entry.get("driver_supported") not in (True, False, None):
        raise BadReport("toolkit %d has a \"driver_supported\" that is not true, false or null" % index)
    components = entry.get("components")
    components = {} if components is None else components
    if not isinstance(components, dict):
        raise BadReport("toolkit %d has \"components\" that are a JSON %s" % (index, _json_type(components)))
    for name in TRACKED:
        if components.get(name) is not None and not _is_version(components[name]):
            raise BadReport("toolkit %d has a %s version that is not one: %s" % (index, name, _quote(components[name])))
