"""The fast commands' modules, compiled into one file that init's launcher loads and serves.

Why: a fast command imports ~30 of cudaswitch's modules, and Python's path finder costs ~65 us
for each beyond running the module's body (find the file, stat it, open and read its .pyc, check
the .pyc's header): ~2 ms of a ~16 ms `use`, about a third of what `use` costs over `python -c
pass`. The launcher reads this one file instead (install()): each module's code object (unmarshalled
when imported: a command imports a fraction of them) with the identity of the source file it was
compiled from. A module the file lacks, or whose source
changed since (an upgrade, an edit), is imported the normal way, and after a fast command's
output is out the file is written again from what that run imported (refresh()), so it follows
whatever the fast commands use without a list of them to keep.

Trust: that of Python's own __pycache__ and of the launcher that loads it. The file sits beside
the launcher in cudaswitch's data dir; it is used only when it is a regular file of the user's
own that neither group nor others may write, for module names of this package whose source lies
under the package dir the launcher names (a plain sys.path entry: an editable install's finder
is site's, and its launcher loads no bundle), under the interpreter version that wrote it (in
the file's name). No library does this for a plain install: zipimport is slower than the path
finder, and freezing modules means building an interpreter.
"""

import marshal
import os
import sys

from cudaswitch.safeio import file_identity

MAGIC = b"cudaswitch code\n"  # then the index's length (4 bytes, little-endian), the index, the code
FORMAT = 1
INDEX_READ = 16 << 10  # one read holds today's index (~60 modules: ~9 KiB)
MAX_BYTES = 8 << 20  # today's fast commands need ~0.5 MiB
PACKAGE = "cudaswitch"
ModuleSpec = type(__spec__)  # importlib.machinery's, without importing importlib on every start


def bundle_path(launcher_dir):
    """Where the bundle of the launcher in launcher_dir is, for this interpreter."""
    return os.path.join(launcher_dir, "code-%x.marshal" % sys.hexversion)


CODE = type(bundle_path.__code__)  # types.CodeType, without importing types


class Bundle:
    """A meta path finder and loader for the modules of one bundle file."""

    def __init__(self, path, package_root, fd=None, entries=None):
        self.path = path
        self.package_root = package_root  # <package dir>/cudaswitch
        self.fd = fd  # the file as it was opened: a bundle written meanwhile is another file
        self.blobs_at = 0  # where the code after the index starts
        self.entries = entries or {}  # module name -> (source path, its identity, is a package, offset, length)
        self.imported_before = frozenset(sys.modules)  # this module and what it needs: never served
        self.stale = False

    def find_spec(self, name, path=None, target=None):
        entry = self.entries.get(name)
        if entry is None or not self._current(entry):
            return None
        spec = ModuleSpec(name, self, origin=entry[0], is_package=entry[2])
        spec.has_location = True  # __file__ is the source: tracebacks and data files as before
        if entry[2]:
            spec.submodule_search_locations = [os.path.dirname(entry[0])]
        return spec

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        code = self.code(module.__name__)
        if code is None:  # damaged since it was written: this module from its source, the file anew
            self.stale = True
            from importlib.machinery import SourceFileLoader

            return SourceFileLoader(module.__name__, module.__file__).exec_module(module)
        exec(code, module.__dict__)
        return None

    def code(self, name, marshalled=False):
        """The code object of module `name` (its marshal bytes), or None when the file lacks it."""
        offset, length = self.entries[name][3:]
        try:
            data = os.pread(self.fd, length, self.blobs_at + offset)
            code = marshal.loads(data) if len(data) == length else None
        except Exception:  # whatever marshal makes of damage (EOFError, ValueError, TypeError)
            return None
        return (data if marshalled else code) if type(code) is CODE else None

    def _current(self, entry):
        try:
            same = entry[0].startswith(self.package_root + os.sep) and file_identity(entry[0]) == entry[1]
        except (OSError, TypeError, ValueError):
            same = False
        self.stale = self.stale or not same
        return same


def install(launcher_file, package_dir):
    """Put the bundle beside launcher_file first on sys.meta_path (one with no modules when the
    file is absent, foreign or unreadable: refresh() then writes it)."""
    path = bundle_path(os.path.dirname(os.path.abspath(launcher_file)))
    bundle = Bundle(path, os.path.join(os.path.abspath(package_dir), PACKAGE))
    if os.path.dirname(os.path.abspath(__file__)) != bundle.package_root:
        return None  # this package came from elsewhere: never mix its modules with those of package_dir
    _load(bundle)
    sys.meta_path.insert(0, bundle)
    return bundle


def _load(bundle):
    """Open the file and read its index (its modules' code is read when each is imported)."""
    try:
        fd = os.open(bundle.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return
    try:
        st = os.fstat(fd)
        head = os.pread(fd, INDEX_READ, 0) if _trusted(st) and st.st_size <= MAX_BYTES else b""
        size = int.from_bytes(head[len(MAGIC):len(MAGIC) + 4], "little") if head.startswith(MAGIC) else 0
        if len(MAGIC) + 4 + size > len(head):
            head += os.pread(fd, len(MAGIC) + 4 + size - len(head), len(head))
        header, entries = marshal.loads(head[len(MAGIC) + 4:len(MAGIC) + 4 + size])
    except Exception:  # not ours, too short, or whatever marshal makes of damage: no bundle
        os.close(fd)
        return
    if header != (FORMAT, bundle.package_root) or not isinstance(entries, dict):
        os.close(fd)
        return
    bundle.fd, bundle.blobs_at = fd, len(MAGIC) + 4 + size
    bundle.entries = {name: entry for name, entry in entries.items() if _well_formed(name, entry)}


def _well_formed(name, entry):
    return (isinstance(name, str) and name.startswith(PACKAGE + ".") and isinstance(entry, tuple) and len(entry) == 5
            and isinstance(entry[0], str) and type(entry[3]) is int and type(entry[4]) is int)


def _trusted(st):
    """A regular file of this user's that only this user may write."""
    return (st.st_mode & 0o170000) == 0o100000 and st.st_uid == os.geteuid() and not st.st_mode & 0o022


def refresh():
    """Write the bundle again when this run imported a module of the package that it did not
    serve (new to it, or changed since): from the modules this run has and the entries still
    current. Called after a fast command's output is flushed; it never raises and never prints,
    and a launcher dir this user cannot write is left alone (no compiling on every run)."""
    bundle = next((finder for finder in sys.meta_path if isinstance(finder, Bundle)), None)
    if bundle is None:
        return
    try:
        sources = _package_sources(bundle)
        unserved = [name for name in sources if getattr(sys.modules[name].__spec__, "loader", None) is not bundle]
        if (unserved or bundle.stale) and os.access(os.path.dirname(bundle.path), os.W_OK):
            _write(bundle, sources)
    except Exception:  # a cache: whatever goes wrong, the next run imports the normal way
        pass


def _package_sources(bundle):
    """{module name: source path} of this run's modules of the package that a bundle may hold."""
    found = {}
    for name, module in list(sys.modules.items()):
        origin = getattr(module, "__file__", None)
        if (name.startswith(PACKAGE + ".") and name not in bundle.imported_before and isinstance(origin, str)
                and origin.endswith(".py") and origin.startswith(bundle.package_root + os.sep)):
            found[name] = origin
    return found


def _write(bundle, sources):
    from cudaswitch.safeio import replace_regular

    kept = {name: (entry[:3], bundle.code(name, marshalled=True)) for name, entry in bundle.entries.items()
            if bundle._current(entry)}
    for name, origin in sources.items():
        if kept.get(name, (None, None))[1] is None:
            about = (origin, file_identity(origin), hasattr(sys.modules[name], "__path__"))  # stat before reading
            with open(origin, "rb") as handle:
                kept[name] = (about, marshal.dumps(compile(handle.read(), origin, "exec", dont_inherit=True)))
    index, blobs, offset = {}, [], 0
    for name, (about, blob) in kept.items():
        if blob is not None:
            index[name] = about + (offset, len(blob))
            blobs.append(blob)
            offset += len(blob)
    head = marshal.dumps(((FORMAT, bundle.package_root), index))
    data = b"".join([MAGIC, len(head).to_bytes(4, "little"), head] + blobs)
    if len(data) <= MAX_BYTES:
        replace_regular(bundle.path, data, mode=0o600, own_file=True)
        os.chmod(bundle.path, 0o600)  # an old file's looser bits are kept by replace_regular
        _remove_other_versions(bundle.path)


def _remove_other_versions(path):
    """The files an interpreter upgraded in place left (its version is in their names)."""
    directory, own = os.path.split(path)
    for name in os.listdir(directory):
        if name != own and name.startswith("code-") and name.endswith(".marshal"):
            os.unlink(os.path.join(directory, name))
