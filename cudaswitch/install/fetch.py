"""Reading a redist mirror that may be hostile: each transfer has a deadline for the whole of it
(socket timeouts are per read: a server sending a byte every few seconds would never be cut off),
a redirect to another scheme, host or port is refused, and a file:// path is read only when it
is a regular file (a FIFO would hang). The deadline is a watchdog thread that shuts the socket
down, ending a read blocked anywhere (TLS handshake, headers, body); reads return what has
arrived (read1), so the time is also checked between them.
"""

import contextlib
import http.client
import io
import os
import socket
import stat
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from http.client import HTTPMessage
from typing import IO, Any
from urllib.request import Request

from cudaswitch.errors import CudaSwitchError, UsageError

Source = io.BufferedReader | http.client.HTTPResponse

MAX_DOCUMENT = 64 << 20  # an index or a manifest; NVIDIA's are well under 1 MiB
READ_DEADLINE = 120.0
DOWNLOAD_DEADLINE = 600.0  # plus the archive's size at MIN_RATE
MIN_RATE = 64 << 10  # bytes per second below which a download is given up
CHUNK = 1 << 20
DEADLINE_ENV = "CUDASWITCH_REDIST_DEADLINE"  # seconds for each transfer, replacing both defaults
TAMPERED = "the mirror is corrupt or hostile; nothing was installed"


class Unreachable(CudaSwitchError):
    """The URL cannot be read (host down, refused, too slow, no such file)."""


def shown(url: str, limit: int = 160) -> str:
    """A URL (or text from the network) cut short for an error line (the boundary escapes it)."""
    return url[:limit] + ("..." if len(url) > limit else "")


def deadline_seconds(default: float) -> float:
    """The whole-transfer deadline: DEADLINE_ENV when set (a slow site link, or a test), else `default`."""
    text = os.environ.get(DEADLINE_ENV)
    if not text:
        return default
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds <= 1e7:
        raise UsageError("%s=%s is not a positive number of seconds" % (DEADLINE_ENV, shown(text, 20)))
    return seconds


class _Watchdog:
    """Shuts down the sockets handed to it once `seconds` have passed, unless stopped first."""

    def __init__(self, seconds: float) -> None:
        self.seconds, self.expired = seconds, False
        self._fds: "list[int]" = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def watch(self, sock: "socket.socket") -> "socket.socket":
        with self._lock:
            self._fds.append(sock.fileno())
            if self.expired:
                _shut(sock.fileno())
        return sock

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for fd in self._fds:
                _shut(fd)

    def stop(self) -> None:
        """Before the sockets are closed: their fd numbers may be reused once they are."""
        with self._lock:
            self._timer.cancel()
            self._fds = []


def _shut(fd: int) -> None:
    """shutdown() on a duplicate of the fd ends the connection for the reading thread too; an fd
    that is no longer a socket (closed and reused) is nothing of ours to cut."""
    with contextlib.suppress(OSError):
        copy = os.dup(fd)
        try:
            duplicate = socket.socket(fileno=copy)
        except OSError:
            os.close(copy)
            raise
        with duplicate:
            duplicate.shutdown(socket.SHUT_RDWR)


def _watched(connection: "Callable[..., Any]", watchdog: _Watchdog) -> "Callable[..., Any]":
    """`connection` made so that its socket goes to the watchdog the moment it is made."""
    def make(*args: "Any", **kwargs: "Any") -> "Any":
        made = connection(*args, **kwargs)
        create = made._create_connection
        made._create_connection = lambda *a, **kw: watchdog.watch(create(*a, **kw))
        return made

    return make


class _Handler(urllib.request.HTTPHandler, urllib.request.HTTPSHandler):
    """http and https, each connection watched (build_opener then adds neither default handler)."""

    def __init__(self, watchdog: _Watchdog) -> None:
        super().__init__()
        self.watchdog = watchdog

    def http_open(self, req: "urllib.request.Request") -> "http.client.HTTPResponse":
        return self.do_open(_watched(http.client.HTTPConnection, self.watchdog), req)

    def https_open(self, req: "urllib.request.Request") -> "http.client.HTTPResponse":
        extra = {"check_hostname": self._check_hostname} if hasattr(self, "_check_hostname") else {}  # < 3.12
        return self.do_open(_watched(http.client.HTTPSConnection, self.watchdog), req,
                            context=self._context, **extra)  # type: ignore[attr-defined]


def _origin(url: str, base: str = "") -> "tuple[str, str, int | None] | None":
    """(scheme, host, port) of `url` read against `base`, or None for a URL that does not parse (a
    bad port, `http://[::1`): a server's Location header is the server's text."""
    try:
        parts = urllib.parse.urlsplit(urllib.parse.urljoin(base, url))
        return parts.scheme.lower(), (parts.hostname or "").lower(), parts.port
    except ValueError:
        return None


class _SameOrigin(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only within the scheme, host and port it was asked of."""

    def http_error_302(self, req: "Request", fp: "IO[bytes]", code: int, msg: str, headers: "HTTPMessage") -> "Any":
        # urllib parses the Location itself before redirect_request sees it: text that is no URL
        # would be a ValueError (a traceback), so it is judged here first
        location = headers.get("location") or headers.get("uri") or ""
        if _origin(location, req.full_url) is None:
            fp.close()
            raise CudaSwitchError("%s redirects to %s, which is not a URL; refused" % (
                shown(req.full_url), shown(location)), "the mirror's server is broken or hostile")
        return super().http_error_302(req, fp, code, msg, headers)

    http_error_301 = http_error_303 = http_error_307 = http_error_308 = http_error_302

    def redirect_request(self, req: "Request", fp: "IO[bytes]", code: int, msg: str, headers: "HTTPMessage",
                         newurl: str) -> "Request | None":
        if _origin(newurl) is None or _origin(newurl) != _origin(req.full_url):
            fp.close()
            raise CudaSwitchError("%s redirects to %s, another scheme, host or port; refused" % (
                shown(req.full_url), shown(newurl)), "give --mirror that address if you trust it")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


class Stream:
    """One open transfer: read(n) gives what has arrived (at most n bytes, b"" at the end)."""

    def __init__(self, source: "Source", url: str, watchdog: "_Watchdog | None" = None) -> None:
        self.source, self.url, self.watchdog = source, url, watchdog
        length = getattr(source, "headers", {}).get("Content-Length")
        self.length = int(length) if length and length.strip().isdigit() else None

    def __enter__(self) -> "Stream":
        return self

    def __exit__(self, *exc: object) -> None:
        if self.watchdog is not None:
            self.watchdog.stop()
        self.source.close()

    def _late(self) -> Unreachable:
        return Unreachable("%s took longer than %d s in all; given up" % (shown(self.url), self.watchdog.seconds),  # type: ignore[union-attr]
                           "the mirror is too slow or stalls; %s sets the time" % DEADLINE_ENV)

    def read(self, size: int) -> bytes:
        try:
            data = self.source.read1(size)
        except (OSError, http.client.HTTPException) as exc:
            if self.watchdog is not None and self.watchdog.expired:
                raise self._late() from None
            raise Unreachable("cannot read %s: %s" % (shown(self.url), getattr(exc, "strerror", None) or exc)) from None
        if self.watchdog is not None and self.watchdog.expired:
            raise self._late()
        return data

    def chunks(self, limit: int, too_big: "Callable[[int | None], CudaSwitchError]") -> "Iterator[bytes]":
        """The body as it arrives; too_big(the declared length, or None once over `limit`) refuses it."""
        if self.length is not None and self.length > limit:  # said before a byte is sent
            raise too_big(self.length)
        total = 0
        while chunk := self.read(CHUNK):
            total += len(chunk)
            if total > limit:
                raise too_big(None)
            yield chunk


def local_path(url: str) -> str:
    return urllib.request.url2pathname(urllib.parse.urlsplit(url).path)


def open_url(url: str, timeout: float, deadline: float) -> Stream:
    """A Stream of `url`; `timeout` bounds each wait, `deadline` (seconds) the whole transfer."""
    if url.startswith("file://"):
        return Stream(_open_local(url), url)
    watchdog = _Watchdog(deadline)
    opener = urllib.request.build_opener(_Handler(watchdog), _SameOrigin())
    try:
        return Stream(opener.open(url, timeout=timeout), url, watchdog)
    except urllib.error.HTTPError as exc:
        watchdog.stop()
        raise Unreachable("%s answered HTTP %d (%s)" % (shown(url), exc.code, shown(str(exc.reason), 60))) from None
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        watchdog.stop()
        if watchdog.expired:
            raise Unreachable("%s did not answer within %d s; given up" % (shown(url), deadline)) from None
        reason = getattr(exc, "reason", None) or exc
        raise Unreachable("cannot reach %s: %s" % (shown(url), getattr(reason, "strerror", None) or reason)) from None
    except BaseException:
        watchdog.stop()
        raise


def _open_local(url: str) -> "io.BufferedReader":
    path = local_path(url)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO must not block the open
    except OSError as exc:
        raise Unreachable("cannot read %s: %s" % (shown(url), exc.strerror or exc)) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise Unreachable("cannot read %s: not a regular file" % shown(url))
    return os.fdopen(fd, "rb")


def read_all(url: str, timeout: float, limit: int = MAX_DOCUMENT) -> bytes:
    """The bytes at `url`, refused above `limit`, within READ_DEADLINE in all."""
    def too_big(declared: "int | None") -> CudaSwitchError:
        return CudaSwitchError("%s is larger than %d MiB, far more than any index or manifest; refused" % (
            shown(url), limit >> 20), TAMPERED)

    with open_url(url, timeout, deadline_seconds(READ_DEADLINE)) as source:
        return b"".join(source.chunks(limit, too_big))
