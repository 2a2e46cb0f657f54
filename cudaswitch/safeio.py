"""Reading files anyone may have put there (a cloned repository's project file, a cache a crash left,
an image's files under `audit --root`): opened without blocking (a FIFO, a link to /dev/tty),
regular files only, at most `limit` bytes, failures said in one line, TOML with bounded nesting.
Built-in modules only: the fast path reads caches through here."""

import os
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

PROC_TEXT = ("/proc/modules", "/proc/version")
TOML_MAX_DEPTH = 32  # config and project files nest two or three levels; 1000 overflows tomllib's recursion


class Unreadable(Exception):
    """A file that cannot be read as data; str() is one line without the file's content."""


def open_regular(path: str) -> int:
    """A read-only fd of the regular file at path, opened without blocking (the caller closes it).
    FileNotFoundError when absent, Unreadable for anything else that is not data."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise Unreadable(_reason(exc)) from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISREG(mode):
            return fd
        problem = ("it is a directory, not a file" if stat.S_ISDIR(mode)
                   else "not a regular file (a FIFO, socket or device)")
    except OSError as exc:
        problem = _reason(exc)
    os.close(fd)
    raise Unreadable(problem)


def read_regular(path: str, limit: int) -> bytes:
    """Up to limit + 1 bytes of the regular file at path (so callers can tell "too large"); as open_regular."""
    fd = open_regular(path)
    try:
        if os.fstat(fd).st_size == 0 and not _procfs_text(path):
            return b""  # pseudo files say 0; reading /proc/kmsg or a trace_pipe would consume what it holds
        return read_fd(fd, limit + 1)
    except OSError as exc:
        raise Unreadable(_reason(exc)) from None
    finally:
        os.close(fd)


def _procfs_text(path: str) -> bool:
    """The live host's /proc files the driver checks name: their size says 0 but their text is there.
    Only these, under their own names: a link from an image or a project could lead to /proc/kmsg
    (a destructive read) or a process's environment."""
    return (path in PROC_TEXT or path.startswith("/proc/driver/nvidia/")) and os.path.realpath(path) == path


def read_or_none(path: str, limit: int) -> "bytes | None":
    """read_regular, or None for any file that is absent or not data (where "cannot read" means "not there")."""
    try:
        return read_regular(path, limit)
    except (OSError, Unreadable):
        return None


def read_fd(fd: int, count: int) -> bytes:
    """Up to `count` bytes from an open file."""
    chunks, left = [], count
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def toml_depth(text: str) -> int:
    """Deepest nesting of arrays and inline tables in TOML text (strings and comments skipped)."""
    depth = deepest = 0
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            triple = text.startswith(c * 3, i)
            end = text.find(c * 3 if triple else c, i + (3 if triple else 1))
            while c == '"' and end > 0 and not triple and _escaped(text, end):
                end = text.find(c, end + 1)
            i = n if end < 0 else end + (3 if triple else 1)
            continue
        if c == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if c in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "]}":
            depth = max(0, depth - 1)
        i += 1
    return deepest


def _escaped(text: str, index: int) -> bool:
    backslashes = 0
    while index - 1 - backslashes >= 0 and text[index - 1 - backslashes] == "\\":
        backslashes += 1
    return backslashes % 2 == 1


def parse_toml(data: bytes) -> "dict[str, Any]":
    """dict from TOML bytes; Unreadable with a one-line reason (no content) when it is not TOML."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise Unreadable("it is not UTF-8 text") from None
    if toml_depth(text) > TOML_MAX_DEPTH:
        raise Unreadable("not valid TOML (nested deeper than %d levels)" % TOML_MAX_DEPTH)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise Unreadable("not valid TOML (%s)" % str(exc).splitlines()[0][:120]) from None
    except (RecursionError, MemoryError, ValueError):
        raise Unreadable("not valid TOML") from None


def file_identity(path: str) -> "tuple[int, int, int, int, int]":
    """(device, inode, mtime ns, ctime ns, size) of the file `path` names through its links: every cache
    key's identity of a file. A rewrite keeping mtime and size (`cp -p`) still moves ctime; one stat,
    not realpath's lstat of every component (a `use` keys ~20 files)."""
    st = os.stat(path)
    return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size)


def identity_text(path: str) -> str:
    """file_identity as one string, for caches keyed by text (OSError as file_identity)."""
    return "|".join(map(str, file_identity(path)))


def quote_prefix(text: str, length: int = 16) -> str:
    """A short, escaped prefix of refused text for an error message: enough to recognise, never enough to
    leak a secret a hostile link pointed at. A path is cut after a whole component, or not at all when
    it is at most twice as long: a name cut in the middle reads as another name."""
    shown = text[:length]
    if len(text) > length and "/" in shown:
        whole = shown[:shown.rindex("/") + 1]
        if whole.strip("/"):
            shown = whole
        elif len(text) <= 2 * length:
            shown = text
    return ascii(shown) + ("..." if len(text) > len(shown) else "")


SEAL = b"CSW1"


def seal(payload: bytes) -> bytes:
    """payload framed with a magic, its length and CRC-32: marshal trusts the sizes it reads, so a bit
    flip in a bare marshal can ask for gigabytes."""
    import binascii

    return SEAL + len(payload).to_bytes(8, "little") + binascii.crc32(payload).to_bytes(4, "little") + payload


def unseal(data: bytes) -> "bytes | None":
    """The payload of a sealed cache file, or None when it is not one or does not check out."""
    import binascii

    payload = data[16:]
    if (not data.startswith(SEAL) or len(data) < 16 or int.from_bytes(data[4:12], "little") != len(payload)
            or int.from_bytes(data[12:16], "little") != binascii.crc32(payload)):
        return None
    return payload


class NotReplaceable(OSError):
    """A path cudaswitch must not replace (a FIFO, device, socket or directory); an OSError, so a caller
    that treats a failed write as "not cached" keeps doing so."""


KINDS = {stat.S_IFDIR: "a directory", stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a device", stat.S_IFBLK: "a device",
         stat.S_IFSOCK: "a socket"}


def replace_target(path: str, through_links: bool = False) -> str:
    """The name a replacement of `path` renames onto: `path` itself, or with through_links what the link
    reaches (a dotfiles link stays a link). NotReplaceable for what is not a regular file: renaming
    over /dev/stdout as root makes it a file; over a FIFO, a reader loses its pipe."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return path
    target = path
    if stat.S_ISLNK(st.st_mode):
        if not through_links:
            return path
        target = os.path.realpath(path)
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return target
    if stat.S_ISREG(st.st_mode):
        return target
    kind = KINDS.get(stat.S_IFMT(st.st_mode), "not a regular file")
    raise NotReplaceable("%s is %s, not a regular file: not replaced" % (path, kind))


def replace_regular(path: str, data: bytes, through_links: bool = False, mode: "int | None" = None,
                    make_dirs: bool = False, own_file: bool = False) -> str:
    """Write bytes to `path` so readers see the old file or the new one: a private O_EXCL temp file with a
    random name beside the target (a link planted under a guessable name is never followed), renamed
    over it. It keeps the old file's mode, else `mode` (default 0o666 less the umask); own_file (ours:
    a FIFO or device there is debris) gets `mode` whatever it had. Returns the path written; raises
    NotReplaceable or OSError."""
    if make_dirs:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    target = path if own_file else replace_target(path, through_links)
    directory = os.path.dirname(os.path.abspath(target))
    fd, tmp = _private_temp(directory, os.path.basename(target))
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), mode if own_file and mode is not None else _mode_for(target, mode))
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return target


def _private_temp(directory: str, name: str) -> "tuple[int, str]":
    """(fd, path) of a new file beside the target, as tempfile.mkstemp makes it, without importing tempfile."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        tmp = os.path.join(directory, ".%s.%s.tmp" % (name[:200], os.urandom(6).hex()))
        try:
            return os.open(tmp, flags, 0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError("no free temporary name in %s" % directory)


def _mode_for(target: str, mode: "int | None") -> int:
    try:
        st = os.lstat(target)
        if stat.S_ISREG(st.st_mode):
            return stat.S_IMODE(st.st_mode)
    except OSError:
        pass
    if mode is not None:
        return mode
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask
