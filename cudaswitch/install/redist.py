"""NVIDIA's redistributable archives as a source of toolkits: the manifest index, one manifest per
release, checked as data, and verified downloads of the archives it names.

Layout (NVIDIA's, and any site mirror's): under a base URL (`http(s)://`, `file://DIR` or a plain
directory), `redistrib_<release>.json` per release (`release_label`, `release_date`, then one object
per component with `name`, `version` and per platform `relative_path`, `sha256`, `size`), and the
archives at the relative paths; cuDNN's adds a `cuda_variant` level (`cuda13`) inside the platform.
Manifests and the index are cached once read, so `install --list` answers offline from a warm cache.

A mirror is someone else's server: every field that later names a path, goes into a modulefile or
bounds a download is checked where the manifest is read (fresh or cached). A release label is a
version, never a path; a component key a plain identifier; a relative path stays inside the mirror;
a sha256 is 64 hex digits; a size a whole number in range. NVIDIA's manifests are 40-60 KiB and nest
four levels: one over MAX_BYTES or nested over MAX_DEPTH is refused before json sees it.
"""

import contextlib
import hashlib
import json
import os
import platform
import re
import urllib.parse
from collections.abc import Iterable, Iterator
from typing import TypeGuard

from cudaswitch.errors import CudaSwitchError
from cudaswitch.install import fetch
from cudaswitch.cache import write_file
from cudaswitch.request import ToolkitRequest
from cudaswitch.safeio import quote_prefix, read_or_none
from cudaswitch.toolkit import version_tuple

NVIDIA_CUDA = "https://developer.download.nvidia.com/compute/cuda/redist/"
FETCH_TIMEOUT = 60.0
# The components a toolkit that compiles and links needs; crt and libnvvm are separate archives
# from 13.0 on (before, cuda_nvcc holds them), so only those the manifest has are required.
TOOLKIT_COMPONENTS = ("cuda_nvcc", "cuda_cudart", "cuda_crt", "libnvvm", "cuda_cccl")
ALWAYS = ("cuda_nvcc", "cuda_cudart")
CHANGED = "the mirror is corrupt or changed; nothing was installed"
MAX_BYTES = 4 << 20
MAX_DEPTH = 16
MAX_ARCHIVE_BYTES = 1 << 40  # no CUDA component archive comes near 1 TiB
RELEASE_LABEL = re.compile(r"\d{1,6}(?:\.\d{1,6}){1,3}")
MANIFEST_NAME = re.compile(r"redistrib_(%s)\.json" % RELEASE_LABEL.pattern)
COMPONENT_VERSION = re.compile(r"\d{1,9}(?:\.\d{1,9}){0,5}")
COMPONENT_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}")
SHA256 = re.compile(r"[0-9a-fA-F]{64}")
SIZE_TEXT = re.compile(r"\d{1,15}")
RELATIVE_PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,199}")
MAX_RELATIVE = 512
JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]', re.DOTALL)  # a whole string, or one bracket
MAX_TEXT = 200
TAMPERED = "the mirror is corrupt or tampered with; nothing was installed"


Unreachable = fetch.Unreachable  # the base URL cannot be read (host down, refused, too slow, no such directory)


def platform_key() -> str:
    """NVIDIA's platform name for this machine: linux-x86_64, linux-sbsa (64-bit Arm servers)."""
    machine = platform.machine().lower()
    return {"x86_64": "linux-x86_64", "amd64": "linux-x86_64", "aarch64": "linux-sbsa",
            "arm64": "linux-sbsa", "ppc64le": "linux-ppc64le"}.get(machine, "linux-" + machine)


def normalize_base(text: "str | None", what: str = "--mirror") -> str:
    """A base URL with one trailing slash; a plain directory becomes file://. `what` names where
    the URL came from (--mirror, config redist_url) in the one-line error for a bad one."""
    text = (text or "").strip()
    if not text:
        raise CudaSwitchError("the redist mirror URL (%s) is empty" % what)
    if text.startswith("/"):
        text = "file://" + text
    try:
        parts = urllib.parse.urlsplit(text)
        parts.port  # noqa: B018 (a port that is not a number raises here, not in the first download)
    except ValueError as exc:
        raise CudaSwitchError("%s %s is not a valid URL: %s" % (what, quote_prefix(text, 60), exc),
                              "give http://host/path/ or file:///dir/") from None
    if parts.scheme not in ("http", "https", "file") or any(c < " " or c == "\x7f" for c in text):
        raise CudaSwitchError("%s %s is not an http(s):// or file:// URL" % (what, quote_prefix(text, 60)),
                              "give http://host/path/ or file:///dir/")
    return text.rstrip("/") + "/"


def list_releases(base: str, timeout: float = FETCH_TIMEOUT) -> "list[str]":
    """Release labels the base offers, oldest first, from its directory listing."""
    if base.startswith("file://"):
        try:
            names = os.listdir(fetch.local_path(base))
        except OSError as exc:
            raise Unreachable("cannot read %s: %s" % (base, exc.strerror or exc)) from None
    else:
        names = re.findall(r"redistrib_[\d.]+\.json", fetch.read_all(base, timeout).decode("utf-8", "replace"))
    found = {m.group(1) for m in map(MANIFEST_NAME.fullmatch, names) if m}
    return sorted(found, key=version_tuple)


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


class ManifestCache:
    """Manifests and the last index seen, per base URL, under the cache dir. What the cache holds
    is checked as a manifest fresh from the mirror is: a cache file is data anyone could have left.
    `hint`, when given, replaces the hint of an Unreachable base (what to do, in the caller's terms)."""

    def __init__(self, cache_dir: str, base: str, hint: "str | None" = None) -> None:
        key = hashlib.sha256(base.encode("utf-8")).hexdigest()[:16]
        self.dir = os.path.join(cache_dir, "redist", key)
        self.base, self.hint = base, hint

    @contextlib.contextmanager
    def _hinted(self) -> "Iterator[None]":
        try:
            yield
        except Unreachable as exc:
            if self.hint is None:
                raise
            raise Unreachable(exc.message, self.hint) from None

    def releases(self, timeout: float = FETCH_TIMEOUT) -> "tuple[list[str], bool]":
        """(releases, offline): the live index, or the cached one when the base cannot be read."""
        index = os.path.join(self.dir, "index.json")
        try:
            with self._hinted():
                releases = list_releases(self.base, timeout)
        except Unreachable:
            cached = _read_json(index)
            labels = cached.get("releases") if cached and cached.get("base") == self.base else None
            if not (isinstance(labels, list) and all(map(is_release_label, labels))):
                raise
            return labels, True
        write_file(index, json.dumps({"base": self.base, "releases": releases}).encode("utf-8"))
        return releases, False

    def manifest(self, release: str, timeout: float = FETCH_TIMEOUT) -> dict:
        """The parsed manifest of one release, from the cache or the base (then cached)."""
        check_release_label(release, self.base)
        path = os.path.join(self.dir, "redistrib_%s.json" % release)
        cached = _read_json(path)
        if cached is not None:
            with contextlib.suppress(BadManifest):  # damaged or planted: read the mirror again
                return check_document(cached, path, release)
        url = self.base + "redistrib_%s.json" % release
        with self._hinted():
            data = fetch.read_all(url, timeout)
        document = check_document(parse(data, url), url, release)
        write_file(path, json.dumps(document).encode("utf-8"))
        return document


def _read_json(path: str) -> "dict | None":
    """A cache file's JSON object, or None for anything else (absent, a FIFO, too big, too deep)."""
    data = read_or_none(path, MAX_BYTES)
    try:
        document = parse(data, path) if data is not None else None
    except BadManifest:
        return None
    return document if isinstance(document, dict) else None


def components(manifest: dict) -> "dict[str, str]":
    """{component key: version} of the manifest's component objects."""
    return {key: value["version"] for key, value in manifest.items()
            if isinstance(value, dict) and isinstance(value.get("version"), str)}


def component_key(name: str, manifest: dict) -> "str | None":
    """What a user writes (nvcc, cublas, cuda_nvrtc) -> the manifest's key, or None."""
    have = components(manifest)  # a key whose object has no version is no component
    return next((key for key in (name, "cuda_" + name, "lib" + name) if key in have), None)


def toolkit_components(manifest: dict, extra: "Iterable[str]" = ()) -> "list[str]":
    """The manifest keys to install: the toolkit's own (those present), then `extra` (user names)."""
    have = components(manifest)
    missing = [c for c in ALWAYS if c not in have]
    if missing:
        raise CudaSwitchError("CUDA %s's manifest has no %s" % (manifest["release_label"], ", ".join(missing)))
    chosen = [c for c in TOOLKIT_COMPONENTS if c in have]
    unknown = []
    for name in extra:
        key = component_key(name, manifest)
        if key is None:
            unknown.append(name)
        elif key not in chosen:
            chosen.append(key)
    if unknown:
        raise CudaSwitchError("CUDA %s has no component %s" % (manifest["release_label"], ", ".join(unknown)),
                              "components: " + ", ".join(sorted(have)))
    return chosen


def archive_entry(manifest: dict, key: str, plat: str, variant: "str | None" = None) -> dict:
    """{component, name, version, url-relative path, sha256, size} of one component's archive."""
    item = manifest[key]
    where = item.get(plat)
    if isinstance(where, dict) and variant is not None:
        where = where.get(variant)
    if not isinstance(where, dict) or not where.get("relative_path"):
        raise CudaSwitchError("%s %s has no archive for %s%s" % (
            key, item.get("version"), plat, " (%s)" % variant if variant else ""))
    relative, sha256, size = archive_fields(where, "%s %s" % (key, item.get("version")))
    return {"component": key, "name": item.get("name") or key, "version": item["version"],
            "relative_path": relative, "sha256": sha256, "size": size}


def resolve(request: "ToolkitRequest", releases: "list[str]") -> "str | None":
    """The newest release label matching a ToolkitRequest (version, specifier or latest), or None."""
    def fits(label: str) -> bool:
        if request.kind == "version":
            return version_tuple(label)[:len(request.value)] == tuple(request.value)
        if request.kind == "specifier":  # a label is digits and dots: always a PEP 440 version
            return request.value.contains(label, prereleases=False)
        return request.kind == "latest"

    return max((r for r in releases if fits(r)), key=version_tuple, default=None)


def download(url: str, dest: str, entry: dict, timeout: float) -> int:
    """Fetch one archive to `dest`, refusing it unless its size and sha256 are the manifest's.
    `timeout` bounds each read; the whole download has a deadline that grows with its size."""
    digest, written, size = hashlib.sha256(), 0, entry["size"]
    name = os.path.basename(entry["relative_path"])

    def too_big(declared: "int | None") -> CudaSwitchError:
        if declared is None:
            return CudaSwitchError("%s is larger than the %d bytes its manifest gives" % (name, size), CHANGED)
        return CudaSwitchError("%s is %d bytes by its server, more than the %d its manifest gives" % (
            name, declared, size), CHANGED)

    deadline = fetch.deadline_seconds(fetch.DOWNLOAD_DEADLINE + size / fetch.MIN_RATE)  # size > 0: checked
    with fetch.open_url(url, timeout, deadline) as source, open(dest, "xb") as sink:
        for chunk in source.chunks(size, too_big):
            written += len(chunk)
            digest.update(chunk)
            sink.write(chunk)
    if written != size:
        raise CudaSwitchError("%s is %d bytes, its manifest says %d" % (name, written, size),
                              "the download was cut short or the mirror is corrupt; nothing was installed")
    if digest.hexdigest() != entry["sha256"]:
        raise CudaSwitchError("%s fails its sha256 check (manifest %s, got %s)" % (
            name, entry["sha256"][:16] + "...", digest.hexdigest()[:16] + "..."), TAMPERED)
    return written
