"""Container images as skopeo names them (`oci:DIR[:TAG]`, `oci-archive:FILE[:TAG]`,
`docker-archive:FILE[:NAME]`): index, manifest and config read, layers handed out in order.

Everything in an image is a stranger's data: each JSON file is read size-capped from a regular file
and its digest checked before it is parsed; archives are read in place, never unpacked.
"""

import hashlib
import json
import os
import platform
import re
import tarfile
from typing import IO, Any, Dict, List, Optional, Tuple, cast

from cudaswitch import tarsafe
from cudaswitch.errors import CudaSwitchError, UsageError
from cudaswitch.safeio import Unreadable, open_regular, quote_prefix

TRANSPORTS = ("oci", "oci-archive", "docker-archive")
JSON_LIMIT = 4 << 20  # manifests and configs are kilobytes; a 4 MiB one is not an image's
MAX_LAYERS = 512
MAX_ARCHIVE_MEMBERS = 100000
DIGEST = re.compile(r"^(sha256|sha512):([0-9a-f]+)$")
HEX_LENGTH = {"sha256": 64, "sha512": 128}
DOCKER_BLOB_NAME = re.compile(r"^(?:blobs/sha256/)?([0-9a-f]{64})(?:\.json|\.tar|/layer\.tar)?$")
REF_NAME = "org.opencontainers.image.ref.name"
INDEX_TYPES = ("application/vnd.oci.image.index.v1+json",
               "application/vnd.docker.distribution.manifest.list.v2+json")
MACHINE_ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64", "ppc64le": "ppc64le"}


class ImageError(CudaSwitchError):
    """An image that cannot be read as one: the message names the reference and what is wrong."""


def parse_reference(text: str) -> Dict[str, Any]:
    """'oci:/srv/img:12.4' -> {"transport", "path", "tag", "text"}; a path holds no ':' (skopeo's rule)."""
    transport, sep, rest = text.partition(":")
    path, _, tag = rest.partition(":")
    if not sep or transport not in TRANSPORTS or not path or "\x00" in text or len(text) > 4096:
        raise UsageError("--image %s is not an image reference" % quote_prefix(text, 60),
                         "give oci:DIR[:TAG], oci-archive:FILE[:TAG] or docker-archive:FILE[:NAME]")
    return {"transport": transport, "path": os.path.abspath(path), "tag": tag or None, "text": text}


class Layer:
    """An image's layer; `digest` is over the stored bytes or (`over`) the uncompressed tar."""

    __slots__ = ("label", "store", "name", "digest", "size", "over")

    def __init__(self, number: int, store: "LayoutDir | Archive", name: str, digest: str, size: Optional[int],
                 over: str) -> None:
        self.label, self.store, self.name = "layer %d (%s)" % (number, digest[:19]), store, name
        self.digest, self.size, self.over = digest, size, over

    def open(self) -> IO[bytes]:
        return self.store.open(self.name)


def parse_digest(value: object, what: str) -> Tuple[str, str]:
    match = DIGEST.match(value) if isinstance(value, str) else None
    if not match or len(match.group(2)) != HEX_LENGTH[match.group(1)]:
        raise ImageError("%s has no valid digest (%s)" % (what, quote_prefix(str(value), 30)))
    return match.group(1), match.group(2)


class LayoutDir:
    """An OCI image layout on disk: oci-layout, index.json, blobs/<alg>/<hex>."""

    def __init__(self, path: str) -> None:
        self.path, self.label = path, path
        if not os.path.isdir(path):
            raise ImageError("%s is not a directory (an OCI image layout)" % path)

    def open(self, name: str) -> IO[bytes]:
        try:
            fd = open_regular(os.path.join(self.path, name))
        except FileNotFoundError:
            raise ImageError("%s has no %s" % (self.label, name)) from None
        except Unreadable as exc:
            raise ImageError("%s in %s: %s" % (name, self.label, exc)) from None
        return os.fdopen(fd, "rb")

    def close(self) -> None:
        pass


class Archive:
    """A tar holding an image, read in place; a symlink member is followed inside it only. Headers
    go through tarsafe: tarfile's pax parser is quadratic (a 256 KiB pax header took 70 s)."""

    def __init__(self, path: str) -> None:
        self.path, self.label = path, path
        try:
            self.raw = os.fdopen(open_regular(path), "rb")
        except FileNotFoundError:
            raise ImageError("%s does not exist" % path) from None
        except Unreadable as exc:
            raise ImageError("%s: %s" % (path, exc)) from None
        try:
            self.tar = tarfile.open(fileobj=self.raw, mode="r:", tarinfo=tarsafe.BoundedInfo)
            self.members = self._index()
        except BaseException as exc:
            self.raw.close()
            if isinstance(exc, tarsafe.HeaderRefused):
                raise ImageError("%s: %s" % (path, exc)) from None
            if isinstance(exc, (tarfile.TarError, OSError, EOFError)):
                raise ImageError("%s is not a readable tar archive (%s)" % (path, _one_line(exc))) from None
            raise

    def _index(self) -> Dict[str, tarfile.TarInfo]:
        members = {}
        for count, member in enumerate(self.tar, 1):
            if count > MAX_ARCHIVE_MEMBERS:
                raise ImageError("%s has more than %d members: not an image archive" % (self.path, MAX_ARCHIVE_MEMBERS))
            members[os.path.normpath(member.name.lstrip("/"))] = member
            self.tar.members = []  # type: ignore[attr-defined]  # the index above is all that is kept
        return members

    def open(self, name: str, hops: int = 0) -> IO[bytes]:
        member = self.members.get(os.path.normpath(name))
        if member is not None and member.issym() and hops < 8:
            target = os.path.normpath(os.path.join(os.path.dirname(name), member.linkname))
            return self.open(target, hops + 1)
        if member is None or not member.isfile():
            raise ImageError("%s has no %s" % (self.label, name))
        return cast(IO[bytes], self.tar.extractfile(member))  # a regular file: never None

    def close(self) -> None:
        self.raw.close()


def read_json(store: "LayoutDir | Archive", name: str, digest: Optional[str] = None, size: Optional[int] = None,
              what: Optional[str] = None) -> dict:
    """A JSON object from the store, its bytes checked against digest and size first."""
    what = what or name
    with store.open(name) as handle:
        data = handle.read(JSON_LIMIT + 1)
    if len(data) > JSON_LIMIT:
        raise ImageError("%s in %s is larger than %d MiB" % (what, store.label, JSON_LIMIT >> 20))
    if size is not None and len(data) != size:
        raise ImageError("%s in %s is %d bytes, its descriptor says %s" % (what, store.label, len(data), size))
    if digest is not None:
        check = hashlib.new(parse_digest(digest, "a blob")[0])
        check.update(data)
        if digest != "%s:%s" % (check.name, check.hexdigest()):
            raise ImageError("%s in %s does not match its digest %s" % (what, store.label, digest[:19]))
    try:
        value = json.loads(data.decode("utf-8"))
    except RecursionError:
        raise ImageError("%s in %s is nested too deeply" % (what, store.label)) from None
    except ValueError as exc:
        raise ImageError("%s in %s is not JSON (%s)" % (what, store.label, _one_line(exc))) from None
    if not isinstance(value, dict):
        raise ImageError("%s in %s is not a JSON object" % (what, store.label))
    return value


def blob_name(digest: str, what: str) -> str:
    algorithm, hexdigest = parse_digest(digest, what)
    return "blobs/%s/%s" % (algorithm, hexdigest)


def _descriptor(value: object, what: str) -> Tuple[Optional[str], str, int]:
    """A descriptor's (mediaType, digest, size), each type-checked."""
    if not isinstance(value, dict):
        raise ImageError("%s is not a descriptor" % what)
    size = value.get("size")
    if not isinstance(size, int) or isinstance(size, bool) or not 0 <= size < 1 << 50:
        raise ImageError("%s has no valid size" % what)
    parse_digest(value.get("digest"), what)
    media = value.get("mediaType")
    return (media if isinstance(media, str) else None), value["digest"], size


def _oci_manifest(store: "LayoutDir | Archive", ref: dict) -> Tuple[dict, str]:
    layout = read_json(store, "oci-layout")
    if not isinstance(layout.get("imageLayoutVersion"), str):
        raise ImageError("%s: oci-layout has no imageLayoutVersion" % store.label)
    index = read_json(store, "index.json")
    entries = index.get("manifests")
    if not isinstance(entries, list) or not entries:
        raise ImageError("%s: index.json lists no manifests" % store.label)
    chosen = _by_tag(entries, ref["tag"], store.label)
    media, digest, size = _descriptor(chosen, "the manifest of %s" % ref["text"])
    for _depth in range(3):  # an index may point at a (multi-platform) index
        document = read_json(store, blob_name(digest, "manifest"), digest, size, "manifest " + digest[:19])
        media = document.get("mediaType") or media
        if media not in INDEX_TYPES and "manifests" not in document:
            return document, digest
        media, digest, size = _descriptor(_by_platform(document.get("manifests"), store.label),
                                          "the platform manifest")
    raise ImageError("%s: image indexes nest more than 3 levels" % store.label)


def _by_tag(entries: list, tag: Optional[str], label: str) -> object:
    def name_of(entry: object) -> object:
        annotations = entry.get("annotations") if isinstance(entry, dict) else None
        return annotations.get(REF_NAME) if isinstance(annotations, dict) else None

    names = sorted(str(n) for n in map(name_of, entries) if n)
    if tag is not None:
        matching = [e for e in entries if name_of(e) == tag]
        if not matching:
            raise ImageError("%s has no image tagged %s" % (label, quote_prefix(tag, 40)),
                             "tags there: %s" % (", ".join(names[:10]) or "none"))
        return matching[0]
    if len(entries) > 1:
        raise ImageError("%s holds %d images: name one" % (label, len(entries)),
                         "add :TAG, one of %s" % (", ".join(names[:10]) or "(untagged)"))
    return entries[0]


def _by_platform(entries: object, label: str) -> object:
    """The entry for this machine's architecture (linux), or the only one."""
    if not isinstance(entries, list) or not entries:
        raise ImageError("%s: an image index lists no manifests" % label)
    want = MACHINE_ARCH.get(platform.machine(), platform.machine())
    for entry in entries:
        plat = entry.get("platform") if isinstance(entry, dict) else None
        if isinstance(plat, dict) and plat.get("os") == "linux" and plat.get("architecture") == want:
            return entry
    if len(entries) == 1:
        return entries[0]
    raise ImageError("%s: no manifest for linux/%s among %d platforms" % (label, want, len(entries)))


def _oci_image(store: "LayoutDir | Archive", ref: dict) -> Dict[str, Any]:
    manifest, digest = _oci_manifest(store, ref)
    if manifest.get("schemaVersion") != 2:
        raise ImageError("manifest %s is not schema version 2" % digest[:19])
    _media, config_digest, config_size = _descriptor(manifest.get("config"), "the image config")
    config = read_json(store, blob_name(config_digest, "config"), config_digest, config_size, "the image config")
    descriptors = manifest.get("layers")
    if not isinstance(descriptors, list) or len(descriptors) > MAX_LAYERS:
        raise ImageError("manifest %s has no valid layer list" % digest[:19])
    checked = [_descriptor(item, "layer %d" % number) for number, item in enumerate(descriptors, 1)]
    layers = [Layer(number, store, blob_name(layer_digest, "a layer"), layer_digest, size, "stored")
              for number, (_media, layer_digest, size) in enumerate(checked, 1)]
    return {"manifest_digest": digest, "config_digest": config_digest, "config": config, "layers": layers}


def _docker_image(store: "LayoutDir | Archive", ref: dict) -> Dict[str, Any]:
    with store.open("manifest.json") as handle:
        data = handle.read(JSON_LIMIT + 1)
    try:
        entries = json.loads(data.decode("utf-8")) if len(data) <= JSON_LIMIT else None
    except (ValueError, RecursionError):
        entries = None
    if not isinstance(entries, list) or not entries or not all(isinstance(e, dict) for e in entries):
        raise ImageError("%s: manifest.json is not docker save's list of images" % store.label)
    entry = _docker_entry(entries, ref["tag"], store.label)
    config_name: Any = entry.get("Config")  # a JSON value, checked below
    match = DOCKER_BLOB_NAME.match(config_name) if isinstance(config_name, str) else None
    if not match:
        raise ImageError("%s: the image's Config is not named by its digest" % store.label)
    config_digest = "sha256:" + match.group(1)
    config = read_json(store, config_name, config_digest, None, "the image config")
    names = entry.get("Layers")
    rootfs: Any = config.get("rootfs") if isinstance(config.get("rootfs"), dict) else {}
    diff_ids = rootfs.get("diff_ids")
    if not isinstance(names, list) or not isinstance(diff_ids, list) or len(names) != len(diff_ids) \
            or len(names) > MAX_LAYERS or not all(isinstance(n, str) for n in names):
        raise ImageError("%s: the layers in manifest.json do not match the config's diff_ids" % store.label)
    for number, diff_id in enumerate(diff_ids, 1):
        parse_digest(diff_id, "layer %d" % number)
    layers = [Layer(number, store, name, diff_id, None, "uncompressed")
              for number, (name, diff_id) in enumerate(zip(names, diff_ids), 1)]
    return {"manifest_digest": None, "config_digest": config_digest, "config": config, "layers": layers}


def _docker_entry(entries: List[dict], name: Optional[str], label: str) -> dict:
    if name is None:
        if len(entries) > 1:
            raise ImageError("%s holds %d images: name one" % (label, len(entries)), "add :NAME:TAG or :@INDEX")
        return entries[0]
    if name.startswith("@") and name[1:].isdigit():
        if int(name[1:]) >= len(entries):
            raise ImageError("%s holds %d images: there is no %s" % (label, len(entries), name))
        return entries[int(name[1:])]
    wanted = docker_name(name)
    for entry in entries:
        if any(isinstance(tag, str) and docker_name(tag) == wanted for tag in entry.get("RepoTags") or []):
            return entry
    raise ImageError("%s has no image named %s" % (label, quote_prefix(name, 40)))


def docker_name(name: str) -> str:
    """A name as docker stores it: 'cuda:12.4' and 'docker.io/library/cuda:12.4' are one image."""
    if ":" not in name.rsplit("/", 1)[-1]:
        name += ":latest"
    first = name.split("/")[0]
    if "/" not in name:
        return "docker.io/library/" + name
    if "." not in first and ":" not in first and first != "localhost":
        return "docker.io/" + name
    return name


def open_image(ref: dict) -> Tuple["LayoutDir | Archive", Dict[str, Any]]:
    """(store, image facts + layers); the caller closes the store when the layers are applied."""
    store = LayoutDir(ref["path"]) if ref["transport"] == "oci" else Archive(ref["path"])
    try:
        image = _docker_image(store, ref) if ref["transport"] == "docker-archive" else _oci_image(store, ref)
        image["config_facts"] = config_facts(image["config"])
    except BaseException:
        store.close()
        raise
    return store, image


ENV_KEYS = ("CUDA_VERSION", "NVIDIA_REQUIRE_CUDA", "NVIDIA_DISABLE_REQUIRE", "NVIDIA_VISIBLE_DEVICES",
            "NVIDIA_DRIVER_CAPABILITIES", "PATH", "LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH",
            "VIRTUAL_ENV", "CONDA_PREFIX", "HOME")


def config_facts(config: dict) -> Dict[str, Any]:
    """The config's architecture, os and Env (every NVIDIA_REQUIRE_* kept: the runtime checks all)."""
    inner: Any = config.get("config") if isinstance(config.get("config"), dict) else {}
    env = {}
    for item in inner.get("Env") or []:
        if isinstance(item, str) and "=" in item and len(item) < 65536 and "\x00" not in item:
            key, _, value = item.partition("=")
            if key in ENV_KEYS or key.startswith("NVIDIA_REQUIRE_"):
                env[key] = value
    return {"architecture": _text(config.get("architecture")), "os": _text(config.get("os")),
            "variant": _text(config.get("variant")), "created": _text(config.get("created")), "env": env}


def _text(value: object) -> Optional[str]:
    return value[:200] if isinstance(value, str) else None


def _one_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0][:200]
