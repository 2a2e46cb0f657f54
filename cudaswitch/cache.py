"""The one cache: every answer cudaswitch keeps between runs is one sealed file in one private dir.

A cached answer decides what `use` puts first on PATH, so whoever can write the cache could make the
next `use` run their program: the dir is 0700 and its files 0600 whatever the umask; a dir not ours
(or a link to one) is never used (one warning, a private dir beside the temp dir instead); a dir of
ours that others may write is made private and emptied; a file is read only when it is a regular
file of ours nobody else may write, up to MAX_BYTES, and only when its seal (length, CRC-32) holds.
Every payload carries cudaswitch's version; keys come from safeio.file_identity. Built-in modules
only: the fast commands read their caches through here."""

import marshal
import os
import stat
import sys

from cudaswitch import __version__
from cudaswitch.safeio import Unreadable, file_identity, open_regular, read_fd, replace_regular, seal, unseal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

MAX_BYTES = 64 << 20  # the registry of a host with hundreds of toolkits and envs is a few MiB
DIR_MODE = 0o700
FILE_MODE = 0o600
LOOSE = "writable by other users"
_checked: "dict[str, str]" = {}  # configured dir -> the dir this process uses (one check, one warning)


def usable_dir(configured: str) -> str:
    """`configured` when it is ours and private (or absent), else a private dir. Checked once per process."""
    if configured not in _checked:
        _checked[configured] = _choose(configured)
    return _checked[configured]


def _choose(configured: str) -> str:
    problem = private_problem(configured)
    if problem is None:
        return configured
    if problem == LOOSE and _make_private(configured):
        warn("the cache dir %s was writable by other users: made private and emptied" % configured)
        return configured
    fallback = os.path.join(os.environ.get("TMPDIR") or "/tmp", "cudaswitch-cache-%d" % os.geteuid())
    if not os.path.isabs(fallback) or private_problem(fallback) is not None:
        import tempfile

        fallback = tempfile.mkdtemp(prefix="cudaswitch-cache-")
    warn("the cache dir %s is %s: not used; caches go to %s (set CUDASWITCH_CACHE_DIR to a dir of your own)"
          % (configured, problem, fallback))
    return fallback


def private_problem(directory: str) -> "str | None":
    """None for a dir of ours no other user may change (or absent), else why not (LOOSE: it can be made private)."""
    parent = unsafe_ancestor(directory)
    if parent:
        return "in %s, which other users may change" % parent
    try:
        link = os.lstat(directory)
        st = os.stat(directory)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return "unusable (%s)" % (exc.strerror or type(exc).__name__)
    if link.st_uid != os.geteuid() or st.st_uid != os.geteuid():
        return "owned by another user"
    if not stat.S_ISDIR(st.st_mode):
        return "not a directory"
    return LOOSE if st.st_mode & 0o022 else None


def unsafe_ancestor(path: str) -> "str | None":
    """The first dir above `path` through which another user could swap what `path` names (owned by
    neither root nor us, or others may write it without the sticky bit), or None."""
    me = os.geteuid()
    parent = os.path.dirname(os.path.abspath(path))
    while True:
        try:
            st = os.stat(parent)
        except OSError:
            st = None
        if st is not None and (st.st_uid not in (0, me) or (st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX)):
            return parent
        if parent == os.path.dirname(parent):
            return None
        parent = os.path.dirname(parent)


def others_may_change(path: str) -> "str | None":
    """Why another user could change the file at `path` (through links), or None. A group-writable file
    passes only in the user's own private group; dirs further up are not judged (NFS homes, group dirs)."""
    real = os.path.realpath(path)
    try:
        st, up = os.stat(real), os.stat(os.path.dirname(real))
    except OSError:
        return _creatable(real)
    if up.st_uid not in (0, os.geteuid()) or (_others_write(up) and not up.st_mode & stat.S_ISVTX):
        return "it is in %s, which other users may change" % os.path.dirname(real)
    if st.st_uid not in (0, os.geteuid()):
        return "it belongs to another user"
    return "other users may write it" if _others_write(st) else None


def _creatable(path: str) -> "str | None":
    """Why another user could make the absent `path` (a dir of theirs in /tmp, later), or None."""
    up = os.path.dirname(path)
    while up != os.path.dirname(up) and not os.path.isdir(up):
        up = os.path.dirname(up)
    try:
        st = os.stat(up)
    except OSError:
        return None
    if st.st_uid not in (0, os.geteuid()) or _others_write(st):
        return "it does not exist, and other users may make it in %s" % up
    return None


def _others_write(st: os.stat_result) -> bool:
    """World-writable, or group-writable in a group other than the user's own private one."""
    if st.st_mode & 0o002:
        return True
    if not st.st_mode & 0o020:
        return False
    import grp
    import pwd

    try:
        me, group = pwd.getpwuid(os.geteuid()).pw_name, grp.getgrgid(st.st_gid)
    except KeyError:
        return True
    return not (group.gr_name == me and set(group.gr_mem) <= {me})


def _make_private(directory: str) -> bool:
    """chmod 0700, then empty it: once nobody else can enter, nothing can be added while it goes."""
    import shutil

    try:
        os.chmod(directory, DIR_MODE)
        for entry in os.scandir(directory):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
    except OSError:
        return False
    return True


def warn(line: str, level: str = "warning") -> None:
    """One warning (or info) line on stderr (never stdout: `use` prints code for eval there)."""
    sys.stderr.write("cudaswitch: %s: %s\n" % (level, line))


def make_dir(directory: str) -> None:
    """Make `directory` and any missing parent 0700 (os.makedirs would give the parents 0777 less the umask)."""
    missing = []
    while directory and not os.path.isdir(directory):
        missing.append(directory)
        directory = os.path.dirname(directory)
    for path in reversed(missing):
        try:
            os.mkdir(path, DIR_MODE)
        except FileExistsError:
            pass
        os.chmod(path, DIR_MODE)


def read_private(path: str, limit: int = MAX_BYTES, secret: bool = False) -> "bytes | None":
    """The bytes of a file of ours nobody else may write (with `secret`, nor read); None for anything else."""
    try:
        fd = open_regular(path)
    except (OSError, Unreadable):
        return None
    try:
        st = os.fstat(fd)
        if st.st_uid != os.geteuid() or st.st_mode & (0o077 if secret else 0o022) or st.st_size > limit:
            return None
        return read_fd(fd, limit + 1)
    except OSError:
        return None
    finally:
        os.close(fd)


def load(cache_dir: str, name: str) -> object:
    """What store() put under `name` by this version of cudaswitch, or None."""
    data = read_private(os.path.join(cache_dir, name))
    payload = unseal(data) if data else None
    if payload is None:
        return None
    try:
        stored = marshal.loads(payload)
    except (ValueError, EOFError, TypeError, MemoryError, RecursionError):
        return None
    if isinstance(stored, tuple) and len(stored) == 2 and stored[0] == __version__:
        return stored[1]
    return None


def store(cache_dir: str, name: str, value: "Any") -> bool:
    """Keep `value` under `name` (sealed, 0600, atomic); False when it cannot be: a miss, never an error."""
    try:
        write_file(os.path.join(cache_dir, name), seal(marshal.dumps((__version__, value))))
    except (OSError, ValueError):
        return False
    return True


def write_file(path: str, data: bytes, mode: int = FILE_MODE) -> None:
    """A file of cudaswitch's own, 0600 (or `mode`, never others-writable) in a 0700 dir, replaced atomically."""
    make_dir(os.path.dirname(path))
    replace_regular(path, data, mode=mode & ~0o022, own_file=True)


def table(cache_dir: str, name: str) -> dict:
    """A small {key: answer} cache (probes, builds); {} when absent or damaged."""
    data = load(cache_dir, name)
    return data if isinstance(data, dict) else {}


def store_table(cache_dir: str, name: str, entries: dict, max_entries: int) -> None:
    """Write `entries`, keeping the newest `max_entries` (dicts keep insertion order)."""
    if len(entries) > max_entries:
        entries = dict(list(entries.items())[-max_entries:])
    store(cache_dir, name, entries)


def remembered(cache_dir: str, name: str, key: "Any", compute: "Callable[[], Any]", max_entries: int = 32,
               keep: "Callable[[Any], bool]" = lambda answer: True, fresh: bool = False) -> "tuple[Any, bool]":
    """(answer, whether it was remembered) of compute() for `key` in the table `name`, computed once
    (again when `fresh`); an answer `keep` refuses (a probe that timed out) is not remembered."""
    known = table(cache_dir, name)
    if not fresh and key in known:
        return known[key], True
    answer = compute()
    if keep(answer):
        known.pop(key, None)  # re-inserted last: the newest survives store_table's trim
        known[key] = answer
        store_table(cache_dir, name, known, max_entries)
    return answer, False


def file_key(path: str) -> "tuple | None":
    """What says a file is unchanged, or None when it is not a regular file here."""
    try:
        return (path, *file_identity(path)) if os.path.isfile(path) else None
    except (OSError, ValueError):
        return None


def identities(paths: "list[str] | tuple[str, ...]") -> "dict[str, tuple | None]":
    """{path: file_identity or None when absent}, for answers that must notice a changed file."""
    out: "dict[str, tuple | None]" = {}
    for path in paths:
        try:
            out[path] = file_identity(path)
        except OSError:
            out[path] = None
    return out


def unchanged(watched: dict) -> bool:
    """Whether every path still has the identity identities() recorded."""
    return all(identities((path,))[path] == was for path, was in watched.items())


def watched_entry(entry: "Any", texts: "tuple[str, ...]") -> bool:
    """A cached answer as its caller stored it: `texts` are strings, "watch" maps paths to identities."""
    return (isinstance(entry, dict) and all(isinstance(entry.get(k), str) for k in texts)
            and isinstance(entry.get("watch"), dict)
            and all(isinstance(p, str) and (i is None or isinstance(i, tuple)) for p, i in entry["watch"].items()))


def parsed(cache_dir: str, name: str, files: "tuple[str, ...]", parse: "Callable[[], Any]") -> "Any":
    """parse() for `files` as they are now, stored under `name` while none of them changed (callers name
    their own module's file among them). A file that is not a regular file: parsed every time."""
    keys = tuple(file_key(path) for path in files)
    if None in keys or not cache_dir:
        return parse()
    key = (sys.version_info[:2], keys)
    stored = load(cache_dir, name)
    if isinstance(stored, tuple) and len(stored) == 2 and stored[0] == key:
        return stored[1]
    value = parse()
    if os.path.isdir(cache_dir):  # never the first to make it: a command refused in one line leaves no trace
        store(cache_dir, name, (key, value))
    return value
