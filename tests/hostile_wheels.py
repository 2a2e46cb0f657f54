"""Wheels shaped like NVIDIA's (a `cuda-toolkit` metapackage pinning component wheels, each with
the .dist-info METADATA, WHEEL and RECORD pip reads), written with zipfile into a find-links dir,
so the real `cudaswitch install RELEASE --from pypi` downloads them through pip with no index.

Tagged py3-none-any rather than manylinux: pip takes them on any machine the tests run on."""

import base64
import hashlib
import os
import zipfile
import zlib

RELEASE = "77.1.0"  # no real CUDA release: only these wheels can answer for it
RUNTIME = "nvidia-cuda-runtime"
RUNTIME_VERSION = "77.1.5"
CHUNK = 1 << 20


def pip_env_with_only(links):
    """pip with no config files and no index: only the wheels in `links` exist."""
    return {"PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(links),
            "PIP_INDEX_URL": "", "PIP_EXTRA_INDEX_URL": ""}


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (name, digest, len(data))


def _dist_info(archive, project, version, metadata_lines, records):
    """METADATA, WHEEL and RECORD, as setuptools writes them for NVIDIA's wheels."""
    info = "%s-%s.dist-info" % (project.replace("-", "_"), version)
    files = {
        info + "/METADATA": "Metadata-Version: 2.1\nName: %s\nVersion: %s\n%s" % (
            project, version, "".join(line + "\n" for line in metadata_lines)),
        info + "/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    for name, text in files.items():
        archive.writestr(name, text)
        records.append(_record_line(name, text.encode()))
    archive.writestr(info + "/RECORD", "\n".join(records + [info + "/RECORD,,"]) + "\n")


def wheel_path(links, project, version):
    return os.path.join(links, "%s-%s-py3-none-any.whl" % (project.replace("-", "_"), version))


def metapackage(links, release=RELEASE):
    """cuda-toolkit RELEASE.0 whose `cudart` extra pins the runtime wheel."""
    pin = "Requires-Dist: %s==%s.*; extra == 'cudart'" % (RUNTIME, RUNTIME_VERSION)
    with zipfile.ZipFile(wheel_path(links, "cuda-toolkit", release + ".0"), "w", zipfile.ZIP_DEFLATED) as archive:
        _dist_info(archive, "cuda-toolkit", release + ".0", ["Provides-Extra: cudart", pin], [])


def runtime_wheel(links, members):
    """The runtime component wheel; `members` maps a path under nvidia/cu77/ to bytes, or to a
    callable that writes the member itself into the open ZipFile (a bomb, a liar). Returns its path."""
    path = wheel_path(links, RUNTIME, RUNTIME_VERSION)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        records = []
        for relative, data in members.items():
            name = "nvidia/cu77/" + relative
            if callable(data):
                data(archive, name)
                records.append("%s,," % name)
            else:
                archive.writestr(name, data)
                records.append(_record_line(name, data))
        _dist_info(archive, RUNTIME, RUNTIME_VERSION, [], records)
    return path


def zeros(size):
    """A member of `size` zero bytes, streamed into the zip (deflate makes ~1 KiB of each MiB)."""
    def write(archive, name):
        info = zipfile.ZipInfo(name)
        info.compress_type = zipfile.ZIP_DEFLATED
        with archive.open(info, "w", force_zip64=True) as sink:
            block = bytes(CHUNK)
            for _ in range(size // CHUNK):
                sink.write(block)
            sink.write(bytes(size % CHUNK))
    return write


def liar(declared, real):
    """A member whose headers declare `declared` bytes over a deflate stream of `real` zero bytes,
    with the CRC of the shorter of the two: a reader that stops at either end finds it sound."""
    def write(archive, name):
        engine = zlib.compressobj(9, zlib.DEFLATED, -15)
        block = bytes(CHUNK)
        stream = b"".join(engine.compress(block) for _ in range(real // CHUNK)) + engine.flush()
        info = zipfile.ZipInfo(name)
        info.compress_type = zipfile.ZIP_DEFLATED
        archive.writestr(info, b"")  # headers of the right shape, patched below
        _replace_last(archive, info, stream, declared, _zeros_crc(min(declared, real)))
    return write


def _zeros_crc(size):
    crc, block = 0, bytes(CHUNK)
    for _ in range(size // CHUNK):
        crc = zlib.crc32(block, crc)
    return zlib.crc32(bytes(size % CHUNK), crc)


def _replace_last(archive, info, stream, declared, crc):
    """Rewrite the member just written (it is last in the file) with `stream` as its data and
    `declared`/`crc` in both its local header and the central directory zipfile will write."""
    handle = archive.fp
    handle.seek(info.header_offset)
    info.CRC, info.compress_size, info.file_size = crc, len(stream), declared
    handle.write(info.FileHeader(False))
    handle.write(stream)
    archive.start_dir = handle.tell()


def deep_files(count, depth):
    """`count` empty files, each at the end of its own chain of `depth` dirs: few members in the
    zip, many dirs made on disk."""
    return {"/".join(["d%d" % n] + ["s"] * (depth - 1) + ["f"]): b"" for n in range(count)}
