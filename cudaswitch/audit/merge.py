"""`audit merge`: many hosts' `audit --json` reports -> one matrix of toolkit versions x hosts.

Reports come from files or stdin, one JSON document per file or one per line (JSON lines, as
`pdsh -N` / `clush -N` / `srun` print `audit --json --compact` from many nodes; a `node: ` prefix,
which pdsh and clush add without -N, is taken off and names the node). A report that cannot be
read is refused with one line naming it, and the others still merge.

The merge streams: one report is read, checked and folded into the matrix at a time, and only a
small summary per node is kept, so 10,000 nodes' reports merge in the memory of a few.
"""

import functools
import gc
import json
import os
import re
import stat

from cudaswitch.audit.validate import TRACKED, BadReport, validate
from cudaswitch.toolkit import STATUSES, version_tuple

STATUS_RANK = {status: rank for rank, status in enumerate(STATUSES)}  # ok best, broken worst
# A CUDA (or cuDNN, NCCL, driver) version: bounded, so "12." + 5,000 digits is refused, not parsed.
HOST_PREFIX = re.compile(r"^([A-Za-z0-9_.\-\[\]]{1,255}): ")  # pdsh's and clush's "node01: "
JSON_SPACE = " \t\r\n"  # what JSON calls whitespace; str.strip() would take more
MAX_REPORT_BYTES = 16 << 20  # a host with 100 toolkits writes ~500 KB


# Nodes share a handful of versions: sort keys and GPU checks are computed once per value.
version_key = functools.lru_cache(maxsize=8192)(version_tuple)


def read_inputs(names, stdin):
    """(label, report, None) or (label, None, why) per document in `names` ('-' is stdin), one
    at a time: a file is read whole (capped), stdin line by line when it carries JSON lines."""
    for name in names:
        if name == "-":
            yield from _stream_documents("<stdin>", stdin)
            continue
        text, why = _read_capped(name)
        label = name if name.isprintable() else repr(name)  # a newline in a file name: still one line
        if why is not None:
            yield label, None, why
        else:
            yield from parse_documents(label, text)


def _read_capped(name):
    """(text, None) or (None, why): opened without blocking (a FIFO or device never hangs us),
    a regular file only, at most MAX_REPORT_BYTES."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        return None, "cannot read (%s)" % (exc.strerror or exc)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None, "not a regular file"
        data = _read_fd(fd, info.st_size)
    except OSError as exc:
        return None, "cannot read (%s)" % (exc.strerror or exc)
    finally:
        os.close(fd)
    if len(data) > MAX_REPORT_BYTES:
        return None, "larger than %d MiB, not an audit report" % (MAX_REPORT_BYTES >> 20)
    return data.decode("utf-8", "replace"), None


def _read_fd(fd, size):
    """Up to MAX_REPORT_BYTES + 1 bytes, in chunks sized from the file's size: one big read
    buffer per file would cost more than the JSON (10,000 files)."""
    chunks, total = [], 0
    while total <= MAX_REPORT_BYTES:
        chunk = os.read(fd, min(max(size + 1, 1 << 16), MAX_REPORT_BYTES + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
        if 0 < size <= total:
            break  # all fstat promised: no second read per file (/proc-like files say 0 and go on)
    return b"".join(chunks)


def _stream_documents(label, stream):
    """JSON lines read one at a time, or one document when the first line is not one by itself."""
    first, number = None, 0
    for index, line in enumerate(_capped_lines(stream), 1):
        if line.strip(JSON_SPACE):
            first, number = line, index
            break
    if first is None:
        yield label, None, "empty"
        return
    node, document = _strip_prefix(first)
    data, error = _loads(document)
    if error is not None:  # a pretty-printed document: the rest of the stream is part of it
        rest = "".join(_strip_prefix(line)[1] + "\n" for line in _capped_lines(stream))
        yield from _checked(label, document + "\n" + rest)
        return
    yield from _checked_data(_line_label(label, number, node), data)
    for line_number, line in enumerate(_capped_lines(stream), number + 1):
        if line.strip(JSON_SPACE):
            node, document = _strip_prefix(line)
            yield from _checked(_line_label(label, line_number, node), document)


def _capped_lines(stream):
    """Lines of at most MAX_REPORT_BYTES; a longer one is cut there (and then refused as JSON).
    Read as bytes when the stream has them: a text stream's readline(limit) is 10x slower."""
    raw = getattr(stream, "buffer", None)
    if raw is not None:
        for line in _capped_byte_lines(raw):
            yield line.decode("utf-8", "replace")
        return
    while True:
        line = stream.readline(MAX_REPORT_BYTES)
        if not line:
            return
        while len(line) == MAX_REPORT_BYTES and not line.endswith("\n"):
            line = stream.readline(MAX_REPORT_BYTES)  # drop the rest of an over-long line
            if not line or line.endswith("\n"):
                line = "\0 longer than %d MiB\n" % (MAX_REPORT_BYTES >> 20)
                break
        yield line


def _capped_byte_lines(raw):
    while True:
        line = raw.readline(MAX_REPORT_BYTES)
        if not line:
            return
        while len(line) == MAX_REPORT_BYTES and not line.endswith(b"\n"):
            line = raw.readline(MAX_REPORT_BYTES)  # drop the rest of an over-long line
            if not line or line.endswith(b"\n"):
                line = b"\0 longer than %d MiB\n" % (MAX_REPORT_BYTES >> 20)
                break
        yield line


def parse_documents(label, text):
    """(label, report, None) / (label, None, error) per document of one file's text: one JSON
    document, or JSON lines when its first line is a document by itself."""
    body = text.strip(JSON_SPACE)
    if not body:
        yield label, None, "empty"
        return
    first, _, rest = body.partition("\n")
    if rest and _loads(_strip_prefix(first)[1])[1] is None:
        # split on "\n" only: str.splitlines() also breaks at \x1c or \x85 inside a JSON string
        for number, line in enumerate(text.split("\n"), 1):
            if line.strip(JSON_SPACE):
                node, document = _strip_prefix(line)
                yield from _checked(_line_label(label, number, node), document)
    elif HOST_PREFIX.match(first):  # pdsh without -N in front of a pretty-printed report
        yield from _checked(label, "\n".join(_strip_prefix(line)[1] for line in body.split("\n")))
    else:
        yield from _checked(label, text)  # as written: json's own rules, nothing stripped


def _strip_prefix(line):
    """(node or None, the line without pdsh's/clush's `node: ` prefix)."""
    line = line.strip(JSON_SPACE)
    match = HOST_PREFIX.match(line)
    return (match.group(1), line[match.end():]) if match else (None, line)


def _line_label(label, number, node):
    return "%s line %d%s" % (label, number, " (%s)" % node if node else "")


def _checked(label, document):
    data, error = _loads(document)
    if error is not None:
        yield label, None, error
    else:
        yield from _checked_data(label, data)


def _checked_data(label, data):
    try:
        yield label, validate(data), None
    except BadReport as exc:
        yield label, None, str(exc)


def _loads(text):
    try:
        return json.loads(text), None
    except RecursionError:
        return None, "not an audit report (nested too deeply)"
    except ValueError as exc:  # also: integers of more than 4,300 digits
        return None, "not JSON (%s)" % str(exc).splitlines()[0][:200]


class Merger:
    """Folds reports in one at a time; result() is the merged matrix."""

    def __init__(self) -> None:
        self.hosts: list = []
        self.rows: dict = {}
        self.errors: list = []
        self.nodes: list = []
        self._taken: set = set()

    def add(self, label: str, report: dict) -> None:
        name = self._unique_name(report["host"], label)
        driver = report.get("driver") or {}
        self.hosts.append({"host": name, "file": label, "root": report.get("root"),
                           "driver": driver.get("release"), "gpus": len(report.get("gpus") or []),
                           "toolkits": len(report["toolkits"])})
        for entry in report["toolkits"]:
            cell = self.rows.setdefault(entry.get("version"), {}).setdefault(
                name, {"statuses": [], "copies": 0, "roots": []})
            cell["copies"] += 1
            cell["roots"].append(entry.get("root"))
            if entry["status"] not in cell["statuses"]:
                cell["statuses"].append(entry["status"])
                cell["statuses"].sort(key=STATUS_RANK.get)
        self.nodes.append(node_summary(name, report))

    def refuse(self, label: str, error: str) -> None:
        self.errors.append({"file": label, "error": error})

    def _unique_name(self, host, label):
        name, number = host, 2
        if name in self._taken:
            name = "%s (%s)" % (host, label)
        while name in self._taken:
            name, number = "%s (%s #%d)" % (host, label, number), number + 1
        self._taken.add(name)
        return name

    def result(self) -> dict:
        names = [h["host"] for h in self.hosts]
        ordered = sorted(self.rows, key=lambda v: (v is not None, version_key(v)), reverse=True)
        return {"hosts": self.hosts, "toolkits": [_row(version, self.rows[version], names) for version in ordered],
                "errors": self.errors}


def node_summary(name, report):
    """What the skew report compares across nodes, nothing more (10,000 of these stay small)."""
    driver = report.get("driver") or {}
    release = driver.get("release")
    toolkits, versions, unsupported, components = {}, {}, set(), {}
    for entry in report["toolkits"]:
        version, status = entry.get("version"), entry["status"]
        if version:
            short = _short(version)
            _keep_best(toolkits, short, status)
            _keep_best(versions, version, status)
            if entry.get("driver_supported") is False:
                unsupported.add(short)
        found = entry.get("components")
        if found:
            for key in TRACKED:
                if found.get(key):
                    components.setdefault(key, set()).add(found[key])
    gpus = {}
    for gpu in report.get("gpus") or ():
        label = (gpu.get("name") or gpu.get("model") or "unknown GPU", gpu.get("capability"))
        gpus[label] = gpus.get(label, 0) + 1
    return {"host": name, "driver": release, "branch": release.split(".")[0] if release else None,
            "driver_cuda": driver.get("cuda"), "toolkits": toolkits, "unsupported": sorted(unsupported),
            "versions": {v: versions[v] for v in sorted(versions, key=version_key)},
            "components": {key: sorted(components.get(key, ()), key=version_key) for key in TRACKED},
            "gpus": sorted((model, capability, count) for (model, capability), count in gpus.items())}


def _keep_best(best, version, status):
    """best[version] = the best status seen for it (ok over incomplete over broken)."""
    if version and STATUS_RANK[status] < STATUS_RANK.get(best.get(version), len(STATUSES)):
        best[version] = status


@functools.lru_cache(maxsize=8192)
def _short(version):
    return ".".join(version.split(".")[:2]) if version else None


def merge_inputs(names, stdin, on_refused) -> Merger:
    """Every report of `names` ('-' is stdin) folded into a Merger as it is read; each refused
    one is told to on_refused(label, error) at once, so a long merge names them as it goes."""
    merger = Merger()
    # JSON trees hold no cycles: refcounting frees each report, and the cyclic collector would
    # only rescan the growing matrix every few hundred reports (~12% of a 10,000-node merge).
    collecting = gc.isenabled()
    gc.disable()
    try:
        for label, report, error in read_inputs(names, stdin):
            if error is None:
                merger.add(label, report)
            else:
                merger.refuse(label, error)
                on_refused(label, error)
    finally:
        gc.freeze()  # the matrix lives until exit: later passes (skew, JSON) need not rescan it
        if collecting:
            gc.enable()
    return merger


def merge(reports, errors=()):
    """The merged matrix of [(label, report)] and [(label, error)] (all in memory: for callers
    that already hold the reports; the command streams through Merger)."""
    merger = Merger()
    for label, report in reports:
        merger.add(label, report)
    for label, error in errors:
        merger.refuse(label, error)
    return merger.result()


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
