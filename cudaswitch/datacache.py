"""Parsed data files cached by the files' own stat, for commands that read a table on every run
(torch's build table: parsing the TOML alone is ~30 ms, importing tomllib ~6 ms more). Generic on
purpose: the caller names the files its answer comes from (its own module's file among them, so
a changed parser or rule never meets an old result) and the function that parses them; the
content and schema of the files are the caller's business.

The cache is a sealed marshal (safeio.seal) in the cache dir, valid while every file keeps its
size, mtime, ctime and inode and cudaswitch its version. A result marshal cannot hold, a file
that is not a regular file on disk (a zipped install), or a cache dir that does not exist yet or
cannot be written: the parse runs every time, as it did before."""

import marshal
import os
import sys

from cudaswitch import __version__
from cudaswitch.paths import atomic_write
from cudaswitch.safeio import file_identity, load_marshal, seal

FORMAT = 1
MAX_BYTES = 32 << 20


def file_key(path):
    """What says a file is unchanged, or None when it is not a regular file here."""
    try:
        return (path, *file_identity(path)) if os.path.isfile(path) else None
    except (OSError, ValueError):
        return None


def parsed(cache_dir, name, files, parse):
    """parse() for `files` as they are now: from cache_dir/name when none of them changed since
    it was stored, else parsed again (and stored)."""
    keys = tuple(file_key(path) for path in files)
    if None in keys or not cache_dir:
        return parse()
    key = (FORMAT, __version__, sys.version_info[:2], keys)
    where = os.path.join(cache_dir, name)
    stored = load_marshal(where, MAX_BYTES)
    if isinstance(stored, tuple) and len(stored) == 2 and stored[0] == key:
        return stored[1]
    value = parse()
    if not os.path.isdir(cache_dir):  # never the first to make it: a command that caches nothing
        return value                  # else (an image audit refused in one line) leaves no trace
    try:
        atomic_write(where, seal(marshal.dumps((key, value))))
    except (OSError, ValueError):  # unmarshallable (a TOML date) or a read-only cache dir: no cache
        pass
    return value
