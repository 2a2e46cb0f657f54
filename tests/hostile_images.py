"""Small hostile images as real oci-archive and docker-archive files: the layout is written here
(its blobs and manifest are the attack), then skopeo copies it into both archive forms, as a
registry pull or `docker save` would hand it to a user. Used by tests/test_hostile_images.py and
bench/hostile_images.py.

- pax header: a small, valid image whose outer archive (the tar skopeo wrote) ends in a pax header
  of nothing but digits (CVE-2024-6232: tarfile's parser is quadratic; 256 KiB took 70 s);
- same blob N times: one gzip layer holding a file of zeros, listed N times in the manifest
  (a 382 KB image listing one blob 512 times took 445 s);
- links: one gzip layer of symlinks in a directory the audit's view keeps (a million in 7 MiB
  wrote a million symlinks, 598 MiB);
- dirs: files each 128 levels down a path of their own, every parent made implicitly
  (1.5 million dirs took 157 s and 723 MiB).
"""

import gzip
import hashlib
import io
import json
import shutil
import tarfile
import zlib
from pathlib import Path

from tests import kits
from tests.hostile_archives import raw_member
from tests.image_support import run

TOOLKIT = "usr/local/cuda-12.4"
VERSION_JSON = json.dumps({"cuda": {"name": "CUDA SDK", "version": "12.4.1"},
                           "cuda_cudart": {"name": "CUDA Runtime (cudart)", "version": "12.4.127"}}).encode()


def digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def tar_of(entries) -> bytes:
    """An uncompressed layer tar from [(name, kind, bytes or link target)], kind file | dir | link."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, kind, value in entries:
            info = tarfile.TarInfo(name)
            info.mode, info.mtime = 0o755 if kind == "dir" else 0o644, 1700000000
            info.type = {"file": tarfile.REGTYPE, "dir": tarfile.DIRTYPE, "link": tarfile.SYMTYPE}[kind]
            if kind == "link":
                info.linkname = value
            info.size = len(value) if kind == "file" else 0
            tar.addfile(info, io.BytesIO(value) if kind == "file" else None)
    return out.getvalue()


def packed(tar: bytes):
    """(diff_id, gzip blob) of a layer tar."""
    return digest(tar), gzip.compress(tar, 6)


def toolkit_layer():
    return packed(tar_of([(TOOLKIT + "/version.json", "file", VERSION_JSON)]))


def write_layout(dest: Path, layers):
    """An OCI layout listing `layers` [(diff_id, gzip blob)] in order, as a registry would serve it."""
    blobs = dest / "blobs/sha256"
    blobs.mkdir(parents=True)
    descriptors, diff_ids = [], []
    for diff_id, packed in layers:
        descriptors.append({"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": digest(packed),
                            "size": len(packed)})
        diff_ids.append(diff_id)
        (blobs / digest(packed)[7:]).write_bytes(packed)
    config = json.dumps({"architecture": "amd64", "os": "linux", "config": {"Env": ["CUDA_VERSION=12.4.1"]},
                         "rootfs": {"type": "layers", "diff_ids": diff_ids}}).encode()
    manifest = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                           "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                                      "digest": digest(config), "size": len(config)},
                           "layers": descriptors}).encode()
    for data in (config, manifest):
        (blobs / digest(data)[7:]).write_bytes(data)
    (dest / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
    (dest / "index.json").write_text(json.dumps({"schemaVersion": 2, "manifests": [
        {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": digest(manifest),
         "size": len(manifest), "annotations": {"org.opencontainers.image.ref.name": "t"}}]}))


def archives(where: Path, layers):
    """{"oci-archive": ref, "docker-archive": ref} of the image, both written by skopeo."""
    skopeo = kits.require("skopeo")
    write_layout(where / "layout", layers)
    refs = {"oci-archive": "oci-archive:%s:t" % (where / "image-oci.tar"),
            "docker-archive": "docker-archive:%s:hostile:t" % (where / "image-docker.tar")}
    for ref in refs.values():
        run(skopeo, "--insecure-policy", "copy", "oci:%s:t" % (where / "layout"), ref)
    shutil.rmtree(where / "layout")
    return refs


def archive_path(ref: str) -> Path:
    return Path(ref.split(":")[1])


def relist(ref: str, times: int):
    """Rewrites the image's archive so its last layer is listed `times` times (manifest, config's
    diff_ids, index or manifest.json re-digested): skopeo itself reads every listing, minutes."""
    path = archive_path(ref)
    with tarfile.open(path) as tar:
        files = {m.name: (m, tar.extractfile(m).read() if m.isfile() else None) for m in tar.getmembers()}
    docker = "manifest.json" in files
    index = json.loads(files["manifest.json" if docker else "index.json"][1])
    manifest = index[0] if docker else json.loads(files["blobs/sha256/" + index["manifests"][0]["digest"][7:]][1])
    config_name = manifest["Config"] if docker else "blobs/sha256/" + manifest["config"]["digest"][7:]
    config = json.loads(files[config_name][1])
    config["rootfs"]["diff_ids"] += config["rootfs"]["diff_ids"][-1:] * (times - 1)
    config_bytes = json.dumps(config).encode()
    extra = {}
    if docker:
        manifest["Layers"] += manifest["Layers"][-1:] * (times - 1)
        manifest["Config"] = digest(config_bytes)[7:] + ".json"
        extra[manifest["Config"]] = config_bytes
        extra["manifest.json"] = json.dumps(index).encode()
    else:
        manifest["layers"] += manifest["layers"][-1:] * (times - 1)
        manifest["config"].update(digest=digest(config_bytes), size=len(config_bytes))
        manifest_bytes = json.dumps(manifest).encode()
        index["manifests"][0].update(digest=digest(manifest_bytes), size=len(manifest_bytes))
        extra.update({"blobs/sha256/" + digest(config_bytes)[7:]: config_bytes,
                      "blobs/sha256/" + digest(manifest_bytes)[7:]: manifest_bytes,
                      "index.json": json.dumps(index).encode()})
    with tarfile.open(path, "w") as tar:
        for name, (member, data) in files.items():
            if name not in extra:
                tar.addfile(member, io.BytesIO(data) if data is not None else None)
        for name, data in extra.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


# ---------------------------------------------------------------- the cases


def with_pax_header(ref: str, size: int):
    """Appends a pax header of `size` digits (and the member it would describe) to the image's
    archive, after everything skopeo wrote and before the end-of-archive blocks."""
    path = archive_path(ref)
    with tarfile.open(path) as tar:
        end = max(m.offset_data + m.size + (-m.size % 512) for m in tar.getmembers())
    head = path.read_bytes()[:end]
    tail = tarfile.TarInfo("zzz").tobuf(format=tarfile.USTAR_FORMAT) + b"\0" * 10240
    path.write_bytes(head + raw_member("PaxHeader", tarfile.XHDTYPE, b"1" * size) + tail)


def zeros_layer(mib: int):
    """(diff_id, gzip) of one file of `mib` MiB of zeros: about 1 KiB of gzip per MiB."""
    info = tarfile.TarInfo("opt/zeros.bin")
    info.size = mib << 20
    return streamed([info.tobuf(format=tarfile.USTAR_FORMAT)] + [b"\0" * (1 << 20)] * mib + [b"\0" * 1024])


def streamed(chunks):
    """(diff_id, gzip) of the tar made of `chunks`, never held whole."""
    check, deflate, parts = hashlib.sha256(), zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS), []
    for chunk in chunks:
        check.update(chunk)
        parts.append(deflate.compress(chunk))
    parts.append(deflate.flush())
    return "sha256:" + check.hexdigest(), b"".join(parts)


def links_layer(count: int):
    """(diff_id, gzip) of `count` symlinks in /usr/local/x (a directory the view keeps: toolkits are
    looked for there), each to /usr/local/cuda-12.4. Headers are patched from one template:
    tarfile takes ~20 us a member, too slow for a million."""
    template = tarfile.TarInfo("usr/local/x/l%09d" % 0)
    template.type, template.linkname, template.mtime = tarfile.SYMTYPE, "/" + TOOLKIT, 1700000000
    block = bytearray(template.tobuf(format=tarfile.USTAR_FORMAT))
    block[148:156] = b" " * 8
    base = sum(block) - 9 * ord("0")

    def blocks():
        for start in range(0, count, 4096):
            chunk = []
            for number in range(start, min(count, start + 4096)):
                digits = b"%09d" % number
                block[13:22] = digits
                block[148:156] = b"%06o\0 " % (base + sum(digits))
                chunk.append(bytes(block))
            yield b"".join(chunk)
        yield b"\0" * 1024
    return streamed(blocks())


def dirs_layer(files: int, depth: int = 128):
    """(diff_id, gzip) of `files` empty files each `depth` levels down a path of its own, with no
    dir members: every parent is made implicitly (files * (depth - 1) dirs)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for number in range(files):
            tar.addfile(tarfile.TarInfo("/".join(["%x" % number] + ["d"] * (depth - 2) + ["f"])))
    return packed(out.getvalue())
