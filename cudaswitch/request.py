"""ToolkitRequest: what the user asked for. Matching is a flat list of guards over records.
`packaging` (~10 ms) is imported only for PEP 440 specifiers, which the fast path never handles."""

import os

from cudaswitch.errors import BadRequest
from cudaswitch.toolkit import version_tuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any, TypeVar
    from cudaswitch.toolkit import AnyRecord
    Record = TypeVar("Record", bound=AnyRecord)

SOURCES = ("user", "managed", "system", "module", "spack", "conda", "pip")
SPECIFIER_START = "<>=!~"
MAX_LENGTH = 200


def _is_version(text: str) -> bool:
    pieces = text.split(".")
    return 1 <= len(pieces) <= 3 and all(p.isascii() and p.isdigit() and len(p) <= 6 for p in pieces)


class ToolkitRequest:
    """A parsed request: `kind` is version | specifier | latest | system | path."""

    __slots__ = ("text", "kind", "value", "source")

    def __init__(self, text: str, kind: str, value: "Any", source: "str | None" = None) -> None:
        self.text, self.kind, self.value, self.source = text, kind, value, source

    def __repr__(self) -> str:
        return "ToolkitRequest(%r)" % self.text

    @classmethod
    def parse(cls, text: str, allow_path: bool = False) -> "ToolkitRequest":
        raw = text
        text = text.strip()
        if not text or len(text) > MAX_LENGTH or any(ord(c) < 32 or ord(c) == 127 for c in text):
            raise BadRequest("not a toolkit request: %r" % raw[:60], "try 12.4, 13, '>=12.1,<13' or latest")
        if allow_path and (text.startswith(("/", "./", "../", "~")) or text in (".", "..")):
            return cls(raw, "path", os.path.realpath(os.path.expanduser(text)))
        source, _, rest = text.rpartition(":") if ":" in text else ("", "", text)
        if ":" in text and source not in SOURCES:  # ":12" and "foo:12" alike
            raise BadRequest("unknown source %r in %r" % (source, raw), "sources: " + ", ".join(SOURCES))
        request = cls._parse_bare(rest, raw)
        request.source = source or None
        return request

    @classmethod
    def _parse_bare(cls, text: str, raw: str) -> "ToolkitRequest":
        if text in ("latest", "system"):
            return cls(raw, text, None)
        if _is_version(text):
            return cls(raw, "version", version_tuple(text))
        if text and text[0] in SPECIFIER_START:  # text is "" for "conda:"
            from packaging.specifiers import InvalidSpecifier, SpecifierSet

            try:
                return cls(raw, "specifier", SpecifierSet(text))
            except InvalidSpecifier:
                pass
        raise BadRequest(
            "not a toolkit request: %r" % raw, "try 12.4, 13, '>=12.1,<13', conda:12.1 or latest"
        )

    def _version_matches(self, record: "AnyRecord") -> bool:
        """12.4 / 12.4.131 match nvcc's version; 12.4.1, the release name NVIDIA's installers and
        version.json's "cuda" use, matches that too."""
        n = len(self.value)
        if version_tuple(record["version"])[:n] == self.value:
            return True
        release = (record.get("components") or {}).get("cuda")
        return n == 3 and version_tuple(release)[:n] == self.value

    def guards(self, system_real: "str | None" = None) -> "list[tuple[str, Callable[[AnyRecord], bool]]]":
        """The flat list of (name, predicate over a record) that a candidate must pass."""
        guards = []
        if self.source:
            guards.append(("source", lambda r: self.source in r["sources"]))
        if self.kind == "version":
            guards.append(("version", self._version_matches))
        elif self.kind == "specifier":
            guards.append(("specifier", lambda r: bool(r["version"]) and self.value.contains(
                r["version"], prereleases=True)))
        elif self.kind == "system":
            guards.append(("system", lambda r: r["real"] == system_real))
        elif self.kind == "path":
            guards.append(("path", lambda r: self.value in (r["real"], os.path.realpath(r["root"]))))
        if self.kind != "path":
            guards.append(("usable", lambda r: r["status"] != "broken"))
        return guards


def select(request: ToolkitRequest, records: "Sequence[Record]", source_order: "Sequence[str]" = SOURCES,
           system_real: "str | None" = None) -> "Record | None":
    """Highest matching version wins; ties go by source order. A partial request (`12`, a range, latest)
    prefers a complete toolkit to a newer one that cannot compile; an exact one gets what it names."""
    chosen, _ = choose(request, records, source_order, system_real)
    return chosen


def choose(request: ToolkitRequest, records: "Sequence[Record]", source_order: "Sequence[str]" = SOURCES,
           system_real: "str | None" = None, driver_runs: "Callable[[Record], bool] | None" = None,
           ) -> "tuple[Record | None, list[Record]]":
    """(the record `select` picks or None, the newer matches passed over). A partial request prefers a
    complete toolkit this driver runs (`driver_runs`, when given), then a complete one, then any."""
    guards = request.guards(system_real)
    matches = [r for r in records if all(check(r) for _, check in guards)]
    if not matches:
        return None, []

    def rank(record: "AnyRecord") -> "tuple[tuple[int, ...], int]":
        order = min((source_order.index(s) for s in record["sources"] if s in source_order), default=99)
        return (version_tuple(record["version"]), -order)

    best = max(matches, key=rank)
    if not _partial(request):
        return best, []
    # A partial request takes a pre-release (13.4.0rc1) only when nothing else matches, as pip does.
    matches = [r for r in matches if not _pre_release(r["version"])] or matches
    best = max(matches, key=rank)
    wishes = ([lambda r: r["status"] == "ok" and driver_runs(r)] if driver_runs else []) + [
        lambda r: r["status"] == "ok"]
    for wish in wishes:
        fitting = [r for r in matches if wish(r)]
        if fitting:
            chosen = max(fitting, key=rank)
            return chosen, sorted((r for r in matches if rank(r) > rank(chosen)), key=rank, reverse=True)
    return best, []


def _pre_release(version: "str | None") -> bool:
    """'13.4.0rc1', '13.4.0a2', '13.4.0b1' (what pip and a managed install name a pre-release)."""
    tail = (version or "").lstrip("0123456789.")
    label = tail.rstrip("0123456789")
    return label in ("a", "b", "rc") and label != tail


def _partial(request: ToolkitRequest) -> bool:
    return request.kind in ("specifier", "latest") or (request.kind == "version" and len(request.value) == 1)
