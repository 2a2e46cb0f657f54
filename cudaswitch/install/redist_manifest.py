"""A redist manifest checked as data before anything is built from it.

A mirror is someone else's server: every field that later names a path, a version written into a
modulefile, or a size the download trusts is checked here, where the manifest is read (fresh or
from the cache), so code after this sees only well-formed values. A release label is a version
(12.4.1), never a path; a component key is a plain identifier; a version is digits and dots; a
relative path stays inside the mirror; a sha256 is 64 hex digits; a size is a whole number in range.
The document itself is bounded: NVIDIA's manifests are 40-60 KiB and nest four levels, so a
manifest over MAX_BYTES or nested over MAX_DEPTH is refused before json ever sees it.
"""

import json
import re
from typing import TypeGuard

from cudaswitch.errors import CudaSwitchError
from cudaswitch.safeio import quote_prefix

MAX_BYTES = 4 << 20
MAX_DEPTH = 16
MAX_ARCHIVE_BYTES = 1 << 40  # no CUDA component archive comes near 1 TiB
RELEASE_LABEL = re.compile(r"\d{1,6}(?:\.\d{1,6}){1,3}")
COMPONENT_VERSION = re.compile(r"\d{1,9}(?:\.\d{1,9}){0,5}")
COMPONENT_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}")
SHA256 = re.compile(r"[0-9a-fA-F]{64}")
SIZE_TEXT = re.compile(r"\d{1,15}")
RELATIVE_PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,199}")
MAX_RELATIVE = 512
JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]', re.DOTALL)  # a whole string, or one bracket
MAX_TEXT = 200
TAMPERED = "the mirror is corrupt or tampered with; nothing was installed"


class BadManifest(CudaSwitchError):
    """A manifest (or a field of it) that is not the data NVIDIA's scheme describes."""


def shown(value: object) -> str:
    """A refused value for an error line: a short escaped prefix of a string, else its JSON type."""
    if isinstance(value, str):
        return quote_prefix(value, 40)
    return "(%s)" % {bool: "a boolean", int: "a number", float: "a number", list: "a list", dict: "an object",
                     type(None): "null"}.get(type(value), type(value).__name__)


def is_release_label(text: object) -> "TypeGuard[str]":
    return isinstance(text, str) and RELEASE_LABEL.fullmatch(text) is not None


def check_release_label(text: object, where: str) -> str:
    """`text` when it is a release version such as 12.4.1; BadManifest otherwise."""
    if not is_release_label(text):
        raise BadManifest("%s: release_label %s is not a CUDA release version such as 12.4.1" % (where, shown(text)),
                          TAMPERED)
    return text


def json_depth(text: str, limit: int = MAX_DEPTH) -> int:
    """How deep arrays and objects nest in JSON text (strings skipped), counted up to `limit` + 1."""
    depth = deepest = 0
    for match in JSON_TOKEN.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            deepest = max(deepest, depth)
            if deepest > limit:
                break
        elif token in "]}":
            depth -= 1
    return deepest


def parse(data: bytes, where: str) -> object:
    """The JSON in `data`, bounded in size and depth; BadManifest with one line naming `where`."""
    if len(data) > MAX_BYTES:
        raise BadManifest("%s is over %d MiB, not a redistrib manifest" % (where, MAX_BYTES >> 20), TAMPERED)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise BadManifest("%s is not UTF-8 text, not a redistrib manifest" % where, TAMPERED) from None
    if json_depth(text) > MAX_DEPTH:
        raise BadManifest("%s nests deeper than %d levels, not a redistrib manifest" % (where, MAX_DEPTH), TAMPERED)
    try:
        return json.loads(text)
    except (ValueError, RecursionError, MemoryError) as exc:
        reason = str(exc).splitlines()[0][:80] if isinstance(exc, ValueError) else type(exc).__name__
        raise BadManifest("%s is not JSON: %s" % (where, reason), TAMPERED) from None


def load(data: bytes, where: str, release: "str | None" = None) -> dict:
    """The manifest in `data` as a checked dict; `release`, when given, is the label its file name
    promised."""
    return check_document(parse(data, where), where, release)


def check_document(document: object, where: str, release: "str | None" = None) -> dict:
    """`document` when every field the install reads is well-formed (see the module docstring)."""
    if not isinstance(document, dict) or "release_label" not in document:
        raise BadManifest("%s is not a redistrib manifest (no release_label)" % where)
    label = check_release_label(document["release_label"], where)
    if release is not None and label != release:
        raise BadManifest("%s says it is release %s, not %s" % (where, label, release), TAMPERED)
    for key in ("release_date", "release_product"):
        if key in document:
            _check_text(document[key], "%s: %s" % (where, key))
    for key, item in document.items():
        if isinstance(item, dict):
            _check_component(key, item, where)
    return document


def _check_component(key: str, item: dict, where: str) -> None:
    if not COMPONENT_KEY.fullmatch(key):
        raise BadManifest("%s: component name %s is not a plain name" % (where, shown(key)), TAMPERED)
    version = item.get("version")
    if version is not None and not (isinstance(version, str) and COMPONENT_VERSION.fullmatch(version)):
        raise BadManifest("%s: %s's version %s is not digits and dots" % (where, key, shown(version)), TAMPERED)
    if "name" in item:
        _check_text(item["name"], "%s: %s's name" % (where, key))


def _check_text(value: object, what: str) -> None:
    """Free text (a date, a product name) that is shown: printable, one line, short."""
    if not isinstance(value, str) or len(value) > MAX_TEXT or not value.isprintable():
        raise BadManifest("%s %s is not one short line of text" % (what, shown(value)), TAMPERED)


def archive_fields(where: dict, what: str) -> "tuple[str, str, int]":
    """(relative_path, sha256, size) of one platform's archive object `where`, each checked; `what`
    names the component for the error ("cuda_nvcc 13.1.115")."""
    relative = where.get("relative_path")
    if not is_relative_path(relative):
        raise BadManifest("%s: the manifest's relative_path %s leaves the mirror or is not a path" % (
            what, shown(relative)), TAMPERED)
    sha256 = where.get("sha256")
    if not (isinstance(sha256, str) and SHA256.fullmatch(sha256)):
        raise BadManifest("%s: the manifest's sha256 %s is not 64 hex digits" % (what, shown(sha256)), TAMPERED)
    return relative, sha256.lower(), _size(where.get("size"), what)


def is_relative_path(text: object) -> "TypeGuard[str]":
    """A path under the mirror: relative, plain parts (no '', '.', '..'), no control characters."""
    if not isinstance(text, str) or not 0 < len(text) <= MAX_RELATIVE:
        return False
    return all(RELATIVE_PART.fullmatch(part) and part not in (".", "..") for part in text.split("/"))


def _size(value: object, what: str) -> int:
    """NVIDIA writes sizes as strings of digits; a JSON integer is taken too (not a bool or float)."""
    if isinstance(value, str) and SIZE_TEXT.fullmatch(value):
        value = int(value)
    if type(value) is int and 0 < value <= MAX_ARCHIVE_BYTES:
        return value
    if value is None:
        raise BadManifest("%s: the manifest gives no archive size" % what, TAMPERED)
    raise BadManifest("%s: the manifest's archive size %s is not a number of bytes" % (what, shown(value)), TAMPERED)
