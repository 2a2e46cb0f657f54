"""`audit merge`: many hosts' `audit --json` reports -> one matrix of toolkit versions x hosts.

Reports come from files, directories of *.json or stdin, one document per file or JSON lines (as
pdsh/clush/srun print them; pdsh's and clush's `node: ` prefix is taken off and names the node).
An unreadable report is refused with one line; the others still merge. One report is folded in at
a time and identical reports share one Kind, so 100,000 reports merge in ~100 MiB.
"""

import contextlib
import gc
import itertools
import json
import os
import re
import stat
from typing import IO, Any, AnyStr, Callable, Dict, Iterable, Iterator, List, Optional, TextIO, Tuple, cast

from cudaswitch.audit.inventory import REPORT_FORMAT, REPORT_KIND
from cudaswitch.audit.skew import STATUS_RANK, node_summary, version_key
from cudaswitch.audit.validate import MAX_TEXT, BadReport, validate

HOST_PREFIX = re.compile(r"^([A-Za-z0-9_.\-\[\]]{1,255}): ")  # pdsh's and clush's "node01: "
JSON_SPACE = " \t\r\n"  # what JSON calls whitespace; str.strip() would take more
MAX_REPORT_BYTES = 16 << 20  # a host with 100 toolkits writes ~500 KB
DICT_OR_NULL, LIST_OR_NULL = (dict, type(None)), (list, type(None))
FLAG_TYPES = frozenset((bool, type(None)))
# A fleet's reports come in a few shapes; where every node differs, a remembered shape (~2 KB) is
# never met again: past this many, a new shape is checked and folded each time instead.
MAX_SHAPES = 4096
# (label, parsed JSON, None) or (label, None, why it cannot be read)
Document = Tuple[str, Any, Optional[str]]
OnSkipped = Callable[[str, List[str]], None]


def _directory(name: str, on_skipped: OnSkipped) -> Iterator[Document]:
    """What the shell's DIR/*.json would give, without the argument limit; other entries are told
    to on_skipped. A link is followed only inside the directory the admin named."""
    try:
        entries = sorted((entry.name, entry) for entry in os.scandir(name) if not entry.name.startswith("."))
    except OSError as exc:
        yield name, None, "cannot read the directory (%s)" % (exc.strerror or exc)
        return
    inside = os.path.join(os.path.realpath(name), "")
    skipped: List[str] = []
    if not any(base.endswith(".json") for base, _ in entries):
        yield name, None, "a directory without *.json files"
    for base, entry in entries:
        label, path = os.path.join(name, base), entry.path
        if not base.endswith(".json"):
            skipped.append(base + ("/" if entry.is_dir() else ""))
        elif entry.is_symlink() and not os.path.realpath(path).startswith(inside):
            yield label, None, "a link out of %s, not followed" % name
        elif entry.is_dir():
            skipped.append(base + "/")
        else:
            yield from _file(label, path)
    if skipped:
        on_skipped(name, skipped)


def _file(name: str, path: str) -> Iterator[Document]:
    """A regular file's documents, opened without blocking (a FIFO never hangs us), size-capped."""
    label = name if name.isprintable() else repr(name)  # a newline in a file name: still one line
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        try:
            info = os.fstat(fd)
            data = _read_fd(fd, info.st_size) if stat.S_ISREG(info.st_mode) else None
        finally:
            os.close(fd)
    except OSError as exc:
        yield label, None, "cannot read (%s)" % (exc.strerror or exc)
        return
    if data is None:
        yield label, None, "not a regular file"
    elif len(data) > MAX_REPORT_BYTES:
        yield label, None, "larger than %d MiB, not an audit report" % (MAX_REPORT_BYTES >> 20)
    else:
        yield from parse_documents(label, data.decode("utf-8", "replace"))


def _read_fd(fd: int, size: int) -> bytes:
    """Up to MAX_REPORT_BYTES + 1 bytes, in chunks sized from the file (not one big buffer per file)."""
    chunks: List[bytes] = []
    total = 0
    while total <= MAX_REPORT_BYTES:
        chunk = os.read(fd, min(max(size + 1, 1 << 16), MAX_REPORT_BYTES + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
        if 0 < size <= total:
            break  # all fstat promised: no second read per file (/proc-like files say 0 and go on)
    return b"".join(chunks)


def _stream_documents(label: str, stream: TextIO) -> Iterator[Document]:
    """JSON lines read one at a time, or one document when the first line is not one by itself."""
    lines = enumerate(_capped_lines(stream), 1)
    number, first = next(((n, line) for n, line in lines if line.strip(JSON_SPACE)), (0, ""))
    numbered = itertools.chain([(number, first)], lines)
    if not first:
        yield label, None, "empty"
    elif _checked(label, _strip_prefix(first)[1])[2] is None:
        yield from _json_lines(label, numbered)
    else:  # a pretty-printed document: the rest of the stream is part of it
        yield _checked(label, "".join(_strip_prefix(line)[1] + "\n" for _, line in numbered))


def _capped_lines(stream: TextIO) -> Iterator[str]:
    """Lines of at most MAX_REPORT_BYTES (a longer one is refused as JSON); read as bytes where
    the stream has them: a text stream's readline(limit) is 10x slower."""
    raw = getattr(stream, "buffer", None)
    if raw is None:  # a replaced stdin that only has text
        return _capped(stream, "\n", "\0 longer than %d MiB\n" % (MAX_REPORT_BYTES >> 20))
    return (line.decode("utf-8", "replace") for line in _capped(raw, b"\n", b"\0 longer than %d MiB\n"
                                                                % (MAX_REPORT_BYTES >> 20)))


def _capped(stream: IO[AnyStr], newline: AnyStr, longer: AnyStr) -> Iterator[AnyStr]:
    while True:
        line = stream.readline(MAX_REPORT_BYTES)
        if not line:
            return
        while len(line) == MAX_REPORT_BYTES and not line.endswith(newline):
            line = stream.readline(MAX_REPORT_BYTES)  # drop the rest of an over-long line
            if not line or line.endswith(newline):
                line = longer
                break
        yield line


def parse_documents(label: str, text: str) -> Iterator[Document]:
    """Documents of one file's text: JSON lines when its first line is a document, else one."""
    body = text.strip(JSON_SPACE)
    if not body:
        yield label, None, "empty"
        return
    first, _, rest = body.partition("\n")
    if rest and _checked(label, _strip_prefix(first)[1])[2] is None:
        # split on "\n" only: str.splitlines() also breaks at \x1c or \x85 inside a JSON string
        yield from _json_lines(label, enumerate(text.split("\n"), 1))
    elif HOST_PREFIX.match(first):  # pdsh without -N in front of a pretty-printed report
        yield _checked(label, "\n".join(_strip_prefix(line)[1] for line in body.split("\n")))
    else:
        yield _checked(label, text)  # as written: json's own rules, nothing stripped


def _strip_prefix(line: str) -> Tuple[Optional[str], str]:
    """(node or None, the line without pdsh's/clush's `node: ` prefix)."""
    line = line.strip(JSON_SPACE)
    match = HOST_PREFIX.match(line)
    return (match.group(1), line[match.end():]) if match else (None, line)


def _json_lines(label: str, numbered: Iterable[Tuple[int, str]]) -> Iterator[Document]:
    """One document per non-blank line, labelled with its number and the node that sent it."""
    for number, line in numbered:
        if line.strip(JSON_SPACE):
            node, document = _strip_prefix(line)
            yield _checked("%s line %d%s" % (label, number, " (%s)" % node if node else ""), document)


def _checked(label: str, document: str) -> Document:
    """(label, parsed JSON, None) or (label, None, why): Merger.add checks the report's shape."""
    try:
        return label, json.loads(document), None
    except RecursionError:
        return label, None, "not an audit report (nested too deeply)"
    except ValueError as exc:  # also: integers of more than 4,300 digits
        return label, None, "not JSON (%s)" % str(exc).splitlines()[0][:200]


class Kind:
    """What merge keeps of a report but its host name, shared by identical reports (see _shape);
    reports that differ only in their paths (per-node roots) share all but their cells."""

    __slots__ = ("root", "driver", "gpus", "toolkits", "cells", "summary", "kits", "paths")

    def __init__(self, report: dict, summaries: dict) -> None:
        driver = report.get("driver") or {}
        self.driver = driver.get("release")
        self.gpus, self.toolkits = len(report.get("gpus") or []), len(report["toolkits"])
        self.kits = [(entry.get("version"), entry["status"]) for entry in report["toolkits"]]
        self.paths = (report.get("root"), *[entry.get("root") for entry in report["toolkits"]])
        self.root, self.cells = self.paths[0], _cells(self.kits, self.paths[1:])
        summary = node_summary(report)
        # reports that differ only where the skew does not look (a toolkit's root) share one summary
        self.summary = summaries.setdefault(repr(summary), summary)

    def moved(self, paths: tuple) -> "Optional[Kind]":
        """This kind as a report with other paths has it; None where validate() would refuse them."""
        if not ((paths[0] is None or type(paths[0]) is str) and all(
                root is None or (type(root) is str and len(root) <= MAX_TEXT) for root in paths[1:])):
            return None
        kind = Kind.__new__(Kind)
        for name in Kind.__slots__:
            setattr(kind, name, getattr(self, name))
        kind.paths, kind.root, kind.cells = paths, paths[0], _cells(self.kits, paths[1:])
        return kind


def _cells(kits: List[Tuple[Optional[str], str]], roots: tuple) -> Dict[Optional[str], dict]:
    """{version: {statuses (best first), copies, roots}} of a node's toolkits."""
    cells: Dict[Optional[str], dict] = {}
    for (version, status), root in zip(kits, roots):
        cell = cells.setdefault(version, {"statuses": [], "copies": 0, "roots": []})
        cell["copies"] += 1
        cell["roots"].append(root)
        if status not in cell["statuses"]:
            cell["statuses"].append(status)
            cell["statuses"].sort(key=STATUS_RANK.get)
    return cells


class Merger:
    """Folds reports in one at a time, keeping per node its name, file and Kind."""

    def __init__(self) -> None:
        self.names: list = []
        self.files: list = []
        self.kinds: list = []
        self.errors: list = []
        self._taken: set = set()
        self._by_shape: dict = {}
        self._summaries: dict = {}

    def add(self, label: str, report: Any) -> Optional[str]:
        """Fold in one parsed report; the reason it was refused, or None."""
        key, paths = _shape(report) if type(report) is dict else (None, None)
        try:
            kind = self._by_shape.get(key) if key is not None else None
        except TypeError:  # an array or object where a valid report has a string
            key = kind = None
        if kind is not None and paths != kind.paths:
            kind = kind.moved(cast(tuple, paths))  # a shape's key comes with its paths
        host = report.get("host") if kind is not None else None
        if kind is None or not (type(host) is str and 0 < len(host) <= 255 and host.isprintable()):
            try:  # a shape not seen yet, or a bad host name: validate() says exactly what is wrong
                validate(report)
            except BadReport as exc:
                return self.refuse(label, str(exc))
            kind = kind or Kind(report, self._summaries)
            if key is not None and len(self._by_shape) < MAX_SHAPES:
                self._by_shape.setdefault(key, kind)
        self.names.append(self._unique_name(report["host"], label))
        self.files.append(label)
        self.kinds.append(kind)
        return None

    def refuse(self, label: str, error: str) -> str:
        self.errors.append({"file": label, "error": error})
        return error

    def _unique_name(self, host: str, label: str) -> str:
        name, number = host, 2
        if name in self._taken:
            name = "%s (%s)" % (host, label)
        while name in self._taken:
            name, number = "%s (%s #%d)" % (host, label, number), number + 1
        self._taken.add(name)
        return name

    @property
    def nodes(self) -> list:
        """[(name, summary)]: what the skew report compares; identical nodes share one summary."""
        return [(name, kind.summary) for name, kind in zip(self.names, self.kinds)]

    def result(self) -> dict:
        hosts = [{"host": name, "file": label, "root": kind.root, "driver": kind.driver, "gpus": kind.gpus,
                  "toolkits": kind.toolkits} for name, label, kind in zip(self.names, self.files, self.kinds)]
        versions = {version for kind in {id(k): k for k in self.kinds}.values() for version in kind.cells}
        ordered = sorted(versions, key=lambda v: (v is not None, version_key(v)), reverse=True)
        return {"hosts": hosts, "toolkits": [_row(version, self.names, self.kinds) for version in ordered],
                "errors": self.errors}


def _shape(report: dict) -> Tuple[Optional[tuple], Optional[tuple]]:
    """(every value merge reads but host and paths, as one hashable key; the paths), or (None, None)
    where an object or array is missing. Reports of one shape are validated and folded alike, so
    that runs once per shape. An unhashable value fails the lookup (TypeError); numbers compare
    across types (1 == 1.0 == True), so the format and driver_supported are type-checked."""
    driver, gpus, toolkits = report.get("driver"), report.get("gpus"), report.get("toolkits")
    if type(toolkits) is not list or type(driver) not in DICT_OR_NULL or type(gpus) not in LIST_OR_NULL:
        return None, None
    driver = driver or {}
    try:  # an entry that is not an object has no .get: that report goes the slow way
        kits = [(entry.get("status"), entry.get("version"), entry.get("driver_supported"),
                 *_tracked(entry.get("components"))) for entry in toolkits]
        cards = [(gpu.get("name"), gpu.get("model"), gpu.get("capability")) for gpu in gpus or ()]
    except AttributeError:
        return None, None
    form = report.get("format", REPORT_FORMAT)
    if type(form) is not int or not FLAG_TYPES.issuperset([type(kit[2]) for kit in kits]):
        return None, None
    net = _net(report)
    if net is None:
        return None, None
    paths = (report.get("root"), *[entry.get("root") for entry in toolkits])
    return (form, report.get("kind", REPORT_KIND), driver.get("release"), driver.get("cuda"), tuple(cards),
            tuple(kits), net), paths


def _net(report: dict) -> "tuple | None":
    """The NCCL copies and interfaces as one hashable value; None where malformed (validation says why)."""
    nccl, interfaces = report.get("nccl") or [], report.get("interfaces") or []
    try:
        copies = tuple((c.get("path"), c.get("version")) for c in nccl)
        links = tuple((i.get("name"), i.get("mtu"), i.get("state")) for i in interfaces)
    except AttributeError:
        return None
    if type(nccl) is not list or type(interfaces) is not list or any(type(i[1]) not in (int, type(None))
                                                                       for i in links):
        return None
    return copies, links


def _tracked(found: Optional[dict]) -> Tuple[Any, Any, Any]:
    found = {} if found is None else found
    return found.get("cudnn"), found.get("nccl"), found.get("cupti")  # validate.TRACKED, spelled out: 10% faster


def merge_inputs(names: Iterable[str], stdin: TextIO, on_refused: Callable[[str, str], None],
                 on_skipped: OnSkipped) -> Merger:
    """Every report of `names` ('-': stdin) folded into a Merger as read; each refused one told at once."""
    merger = Merger()
    for name in names:
        if name == "-":
            documents = _stream_documents("<stdin>", stdin)
        else:
            documents = _directory(name, on_skipped) if os.path.isdir(name) else _file(name, name)
        for label, report, error in documents:
            error = merger.add(label, report) if error is None else merger.refuse(label, error)
            if error is not None:
                on_refused(label, error)
    return merger


@contextlib.contextmanager
def without_cycle_collector() -> Iterator[None]:
    """The merge without the cyclic collector: its JSON holds no cycles, and rescans cost a tenth."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def _row(version: Optional[str], names: List[str], kinds: List[Kind]) -> dict:
    hosts: Dict[str, dict] = {}
    best: Dict[str, List[str]] = {"ok": [], "incomplete": [], "broken": []}
    missing: List[str] = []
    for name, kind in zip(names, kinds):
        cell = kind.cells.get(version)
        if cell is None:
            missing.append(name)
        else:
            hosts[name] = cell
            best[cell["statuses"][0]].append(name)
    return {"version": version, "hosts": hosts, "ok_on": best["ok"], "incomplete_on": best["incomplete"],
            "broken_on": best["broken"],
            # a toolkit without a version (dangling link, empty dir) is not something a host lacks
            "missing_on": missing if version is not None else []}
