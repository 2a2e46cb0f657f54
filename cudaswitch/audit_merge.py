"""`audit merge`: many hosts' `audit --json` reports -> one matrix of toolkit versions x hosts.

Reports come from files or stdin, one JSON document per file or one per line (JSON lines, as
`pdsh -N` / `clush -N` / `srun` print `audit --json --compact` from many nodes; a `node: ` prefix,
which pdsh and clush add without -N, is taken off). A report that cannot be read is named in
`errors` and the others still merge.
"""

import json
import re

from cudaswitch.audit import REPORT_FORMAT, REPORT_KIND
from cudaswitch.toolkit import STATUSES, version_tuple

STATUS_RANK = {status: rank for rank, status in enumerate(STATUSES)}  # ok best, broken worst
VERSION = re.compile(r"\d+(\.\d+)*")
HOST_PREFIX = re.compile(r"^[A-Za-z0-9_.\-\[\]]+:\s*(?=\{)")


class BadReport(ValueError):
    """One line saying why a report was refused."""


def parse_documents(label, text):
    """[(label, report dict)] and [(label, error)] from one file's or stdin's text: one JSON
    document, or JSON lines when its first line is a document by itself."""
    lines = [(n, HOST_PREFIX.sub("", line.strip(), count=1)) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not lines:
        return [], [(label, "empty")]
    if len(lines) > 1 and _loads(lines[0][1])[1] is None:
        documents = [("%s line %d" % (label, n), line) for n, line in lines]
    else:
        documents = [(label, "\n".join(line for _, line in lines))]
    reports, errors = [], []
    for where, document in documents:
        data, error = _loads(document)
        if error is None:
            try:
                reports.append((where, validate(data)))
            except BadReport as exc:
                error = str(exc)
        if error is not None:
            errors.append((where, error))
    return reports, errors


def _loads(text):
    try:
        return json.loads(text), None
    except ValueError as exc:
        return None, "not JSON (%s)" % str(exc).splitlines()[0]


def validate(report):
    """The report if it has the shape merge reads, else BadReport naming what is wrong: a report
    from a broken node must be refused here, not fail the merge of all the others."""
    if not isinstance(report, dict):
        raise BadReport("not an audit report (a JSON %s, not an object)" % _json_type(report))
    if report.get("kind", REPORT_KIND) != REPORT_KIND:
        raise BadReport("not an audit report (kind %r)" % report["kind"])
    version = report.get("format", REPORT_FORMAT)
    if not isinstance(version, int) or version > REPORT_FORMAT:
        raise BadReport("report format %r is not one this cudaswitch reads (%d)" % (version, REPORT_FORMAT))
    if not isinstance(report.get("host"), str) or not report["host"]:
        raise BadReport("not an audit report (no \"host\")")
    for key, kinds in (("toolkits", list), ("driver", (dict, type(None))), ("gpus", (list, type(None))),
                       ("root", (str, type(None)))):
        if not isinstance(report.get(key), kinds):
            raise BadReport("not an audit report (\"%s\" is a JSON %s)" % (key, _json_type(report.get(key))))
    for index, entry in enumerate(report["toolkits"]):
        _validate_toolkit(index, entry)
    return report


def _json_type(value):
    names = {bool: "boolean", int: "number", float: "number", str: "string", list: "array", dict: "object"}
    return names.get(type(value), "null")


def _validate_toolkit(index, entry):
    if not isinstance(entry, dict) or entry.get("status") not in STATUSES:
        raise BadReport("toolkit %d has no valid \"status\"" % index)
    version = entry.get("version")
    if version is not None and not (isinstance(version, str) and VERSION.fullmatch(version)):
        raise BadReport("toolkit %d has a \"version\" that is not a CUDA version: %r" % (index, version))
    if not isinstance(entry.get("root"), (str, type(None))):
        raise BadReport("toolkit %d has a \"root\" that is not a path" % index)


def merge(reports, errors=()):
    """The merged matrix of [(label, report)]: hosts, one row per toolkit version, errors."""
    hosts, rows = [], {}
    for label, report in reports:
        name = _unique_name(report["host"], label, hosts)
        hosts.append({"host": name, "file": label, "root": report.get("root"),
                      "driver": (report.get("driver") or {}).get("release"),
                      "gpus": len(report.get("gpus") or []), "toolkits": len(report["toolkits"])})
        for entry in report["toolkits"]:
            cell = rows.setdefault(entry.get("version"), {}).setdefault(name, {"statuses": [], "copies": 0, "roots": []})
            cell["copies"] += 1
            cell["roots"].append(entry.get("root"))
            if entry["status"] not in cell["statuses"]:
                cell["statuses"].append(entry["status"])
                cell["statuses"].sort(key=STATUS_RANK.get)
    names = [h["host"] for h in hosts]
    ordered = sorted(rows, key=lambda v: (v is not None, version_tuple(v)), reverse=True)
    return {"hosts": hosts, "toolkits": [_row(version, rows[version], names) for version in ordered],
            "errors": [{"file": label, "error": error} for label, error in errors]}


def _row(version, cells, names):
    best = {name: cell["statuses"][0] for name, cell in cells.items()}
    return {
        "version": version,
        "hosts": {name: cells[name] for name in names if name in cells},
        "ok_on": [n for n in names if best.get(n) == "ok"],
        "incomplete_on": [n for n in names if best.get(n) == "incomplete"],
        "broken_on": [n for n in names if best.get(n) == "broken"],
        # a toolkit without a version (dangling link, empty dir) is not something a host lacks
        "missing_on": [n for n in names if n not in cells] if version is not None else [],
    }


def _unique_name(host, label, hosts):
    taken = {h["host"] for h in hosts}
    if host not in taken:
        return host
    name, number = "%s (%s)" % (host, label), 2
    while name in taken:
        name, number = "%s (%s #%d)" % (host, label, number), number + 1
    return name
