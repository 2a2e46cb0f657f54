"""NVIDIA's redistributable archives as a source of toolkits: the manifest index, one manifest per
release, and verified downloads of the archives it names.

Layout (NVIDIA's, and any site mirror's): under a base URL, `redistrib_<release>.json` per release
(top level `release_label`, `release_date`, `release_product`, then one object per component with
`name`, `version` and per platform `relative_path`, `sha256`, `md5`, `size`), and the archives at
the relative paths. cuDNN uses the same scheme with one more level, `cuda_variant` (`cuda12`,
`cuda13`), inside the platform. The base may be `http(s)://`, `file://DIR` or a plain directory.

Manifests are cached under the cache dir once read (a release's manifest does not change), and the
index is cached too, so `install --list` answers offline from a warm cache.
"""

import contextlib
import hashlib
import json
import os
import platform
import re
import urllib.parse
from collections.abc import Iterable, Iterator

from cudaswitch.errors import CudaSwitchError
from cudaswitch.install import fetch, redist_manifest
from cudaswitch.cache import write_file
from cudaswitch.request import ToolkitRequest
from cudaswitch.safeio import quote_prefix, read_or_none
from cudaswitch.toolkit import version_tuple

NVIDIA_CUDA = "https://developer.download.nvidia.com/compute/cuda/redist/"
MANIFEST_NAME = re.compile(r"redistrib_(\d{1,6}(?:\.\d{1,6}){1,3})\.json")  # the labels redist_manifest takes
FETCH_TIMEOUT = 60.0
# The components a toolkit that compiles and links needs; crt and libnvvm are separate archives
# from 13.0 on (before, cuda_nvcc holds them), so only those the manifest has are required.
TOOLKIT_COMPONENTS = ("cuda_nvcc", "cuda_cudart", "cuda_crt", "libnvvm", "cuda_cccl")
ALWAYS = ("cuda_nvcc", "cuda_cudart")
CHANGED = "the mirror is corrupt or changed; nothing was installed"


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


def cudnn_base(cuda_base: str) -> str:
    """NVIDIA puts cuDNN beside CUDA: .../compute/cuda/redist/ -> .../compute/cudnn/redist/."""
    if cuda_base.endswith("/cuda/redist/"):
        return cuda_base[: -len("cuda/redist/")] + "cudnn/redist/"
    return urllib.parse.urljoin(cuda_base, "cudnn/")


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
            if not cached or cached.get("base") != self.base or not _labels(cached.get("releases")):
                raise
            return cached["releases"], True
        write_file(index, json.dumps({"base": self.base, "releases": releases}).encode("utf-8"))
        return releases, False

    def manifest(self, release: str, timeout: float = FETCH_TIMEOUT) -> dict:
        """The parsed manifest of one release, from the cache or the base (then cached)."""
        redist_manifest.check_release_label(release, self.base)
        path = os.path.join(self.dir, "redistrib_%s.json" % release)
        cached = _read_json(path)
        if cached is not None:
            with contextlib.suppress(redist_manifest.BadManifest):  # damaged or planted: read the mirror again
                return redist_manifest.check_document(cached, path, release)
        url = self.base + "redistrib_%s.json" % release
        with self._hinted():
            data = fetch.read_all(url, timeout)
        document = redist_manifest.load(data, url, release)
        write_file(path, json.dumps(document).encode("utf-8"))
        return document


def _read_json(path: str) -> "dict | None":
    """A cache file's JSON object, or None for anything else (absent, a FIFO, too big, too deep)."""
    data = read_or_none(path, redist_manifest.MAX_BYTES)
    try:
        document = redist_manifest.parse(data, path) if data is not None else None
    except redist_manifest.BadManifest:
        return None
    return document if isinstance(document, dict) else None


def _labels(releases: object) -> bool:
    return isinstance(releases, list) and all(map(redist_manifest.is_release_label, releases))


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
    relative, sha256, size = redist_manifest.archive_fields(where, "%s %s" % (key, item.get("version")))
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

    with fetch.open_url(url, timeout, fetch.download_deadline(size)) as source, open(dest, "xb") as sink:
        for chunk in source.chunks(size, too_big):
            written += len(chunk)
            digest.update(chunk)
            sink.write(chunk)
    if written != size:
        raise CudaSwitchError("%s is %d bytes, its manifest says %d" % (name, written, size),
                              "the download was cut short or the mirror is corrupt; nothing was installed")
    if digest.hexdigest() != entry["sha256"]:
        raise CudaSwitchError("%s fails its sha256 check (manifest %s, got %s)" % (
            name, entry["sha256"][:16] + "...", digest.hexdigest()[:16] + "..."), redist_manifest.TAMPERED)
    return written
