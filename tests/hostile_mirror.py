"""A hostile redist mirror: NVIDIA's layout (redistrib_<release>.json beside <key>/linux-x86_64/
archives, sizes and sha256 all correct, so every check before the unpack passes) serving the
archives of tests/hostile_archives.py, and an HTTP server for it that misbehaves on request:
drips a file one byte every few seconds (headers too), streams an endless document, or redirects
every request to another host and port."""

import hashlib
import http.server
import json
import os
import threading
from pathlib import Path

from tests import hostile_archives

RELEASE = "77.1.0"
PLATFORM = "linux-x86_64"


def archive_name(key):
    return "%s-%s-%s-archive.tar.xz" % (key, PLATFORM, RELEASE)


def benign_cudart():
    top = "cuda_cudart-%s-%s-archive" % (PLATFORM, RELEASE)
    return hostile_archives.tar_bytes([
        hostile_archives.info("dir", top), hostile_archives.info("dir", top + "/include"),
        hostile_archives.info("file", top + "/include/cuda_runtime.h", b"#define CUDART_VERSION 77010\n")])


def build(redist: Path, nvcc_archive: bytes, cudart_archive: bytes | None = None) -> Path:
    """`redist` as a mirror dir of release 77.1.0 whose cuda_nvcc archive is `nvcc_archive`."""
    items = {}
    for key, data in (("cuda_nvcc", nvcc_archive), ("cuda_cudart", cudart_archive or benign_cudart())):
        relative = "%s/%s/%s" % (key, PLATFORM, archive_name(key))
        (redist / key / PLATFORM).mkdir(parents=True, exist_ok=True)
        (redist / relative).write_bytes(data)
        items[key] = {"name": key, "license": "CUDA Toolkit", "version": RELEASE, PLATFORM: {
            "relative_path": relative, "sha256": hashlib.sha256(data).hexdigest(),
            "md5": hashlib.md5(data).hexdigest(), "size": str(len(data))}}
    document = {"release_date": "2026-01-01", "release_label": RELEASE, "release_product": "cuda", **items}
    (redist / ("redistrib_%s.json" % RELEASE)).write_text(json.dumps(document, indent=2))
    return redist


class HostileHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the mirror dir, except: a name in `server.drip` comes one byte every `server.pause`
    seconds (its headers too when `server.drip_headers`); a name in `server.endless` is a stream of
    spaces without a length, `server.endless_mib` long; with `server.redirect` set, every request
    under /redist/ answers 302 to that base plus the rest of the path."""

    protocol_version = "HTTP/1.0"

    def log_message(self, *args):
        pass

    def do_GET(self):
        name = os.path.basename(self.path.rstrip("/"))
        if self.server.redirect and self.path.startswith("/redist/"):
            self.send_response(302)
            self.send_header("Location", self.server.redirect + self.path[len("/redist/"):])
            self.end_headers()
        elif name in self.server.endless:
            self.send_response(200)
            self.end_headers()
            self._endless()
        elif name in self.server.drip:
            self._drip()
        else:
            super().do_GET()

    def _endless(self):
        block = b" " * (1 << 20)
        try:
            for _ in range(self.server.endless_mib):
                if self.server.closing.is_set():
                    return
                self.wfile.write(block)
        except OSError:
            pass  # the client gave up: what the test waits for

    def _drip(self):
        path = self.translate_path(self.path)
        data = Path(path).read_bytes() if os.path.isfile(path) else b"x" * 100_000
        head = b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n" % len(data)
        if not self.server.drip_headers:
            self.wfile.write(head)
            head = b""
        try:
            for byte in head + data:
                if self.server.closing.wait(self.server.pause):
                    return
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
        except OSError:
            pass


class HostileServer:
    """A running HostileHandler server on 127.0.0.1 for `root`; `url` is its redist base."""

    def __init__(self, root: Path, prefix="redist/", host="127.0.0.1"):
        handler = lambda *a, **kw: HostileHandler(*a, directory=str(root), **kw)  # noqa: E731
        self.server = http.server.ThreadingHTTPServer((host, 0), handler)
        self.server.daemon_threads = True
        self.server.drip, self.server.endless, self.server.redirect = set(), set(), None
        self.server.drip_headers, self.server.pause, self.server.endless_mib = False, 2.0, 96
        self.server.closing = threading.Event()
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.port = self.server.server_address[1]
        self.url = "http://%s:%d/%s" % (host, self.port, prefix)

    def close(self):
        self.server.closing.set()
        self.server.shutdown()
        self.server.server_close()


def snapshot(base: Path, skip=()) -> dict:
    """Every path under `base` (links not followed, dirs in `skip` left out): a file or link with
    its size, mtime and link count, a dir as None (its mtime moves whenever an entry is added)."""
    found = {}
    for directory, dirs, files in os.walk(base):
        here = Path(directory)
        dirs[:] = [d for d in dirs if here / d not in skip]
        for name in dirs:
            found[str(here / name)] = None
        for name in files:
            stat = os.lstat(here / name)
            found[str(here / name)] = (stat.st_size, stat.st_mtime_ns, stat.st_nlink)
    return found
