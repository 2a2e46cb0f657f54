"""The fast commands' modules, compiled into one file that init's launcher loads and serves.

Why: a fast command imports ~30 of cudaswitch's modules, and Python's path finder costs ~65 us
for each beyond running the module's body (find the file, stat it, open and read its .pyc, check
the .pyc's header): ~1.5 ms of a ~16 ms `use`, a third of what `use` costs over `python -c pass`.
The launcher reads this one file's index instead (install()); each module's code is read and
unmarshalled when it is imported. An entry is served while its source file and the directories
a normal import would search keep their identity (an upgrade, an edit, a new `x/` package or
`x.so` beside `x.py` each change one); anything else is imported the normal way, and after a
fast command's output is out the file is written again from what that run imported (refresh()),
so it follows whatever the fast commands use without a list of them to keep. A served module's
loader is Python's own SourceFileLoader for its source (get_source, resources and reload as a
normal import has them).

Trust: that of Python's own __pycache__ and of the launcher that loads it. The file sits beside
the launcher in cudaswitch's data dir; it is used only when it and its directory are the user's
own and neither group nor others may write them, for module names of this package whose source
lies under the package dir the launcher names (a plain sys.path entry: an editable install's
finder is site's, and its launcher loads no bundle), and only under the bytecode format of the
interpreter that wrote it. No library does this for a plain install: zipimport is slower than
the path finder, and freezing modules means building an interpreter.
"""

import marshal
import os
import sys

from cudaswitch.safeio import file_identity

MAGIC = b"cudaswitch code\n"  # then the index's length (4 bytes, little-endian), the index, the code
FORMAT = 2
INDEX_READ = 16 << 10  # one read holds today's index (~60 modules: ~9 KiB)
MAX_BYTES = 8 << 20  # today's fast commands need ~0.5 MiB
PACKAGE = "cudaswitch"
_bootstrap = sys.modules["_frozen_importlib_external"]  # importlib.machinery's parts, already loaded
ModuleSpec, SourceFileLoader = type(__spec__), _bootstrap.SourceFileLoader
SERVED = "cudaswitch bundle"  # spec.loader_state of a module served from the file
HEADER = (FORMAT, _bootstrap.MAGIC_NUMBER)  # the bytecode format: a rebuilt -dev interpreter changes it


def bundle_path(launcher_dir):
    """Where the bundle of the launcher in launcher_dir is, for this interpreter."""
    return os.path.join(launcher_dir, "code-%x.marshal" % sys.hexversion)


CODE = type(bundle_path.__code__)  # types.CodeType, without importing types


class Bundle:
    """A meta path finder and loader for the modules of one bundle file."""

    def __init__(self, path, package_root):
        self.path = path
        self.package_root = package_root  # <package dir>/cudaswitch
        self.fd = None  # the file as it was opened: a bundle written meanwhile is another file
        self.blobs_at = 0  # where the code after the index starts
        self.entries = {}  # module name -> (source, its identity, is a package, offset, length, directories)
        self.imported_before = frozenset(sys.modules)  # this module and what it needs: never served
        self.stale = False
        self._directories = {}  # directory -> whether it kept the identity an entry recorded

    def find_spec(self, name, path=None, target=None):
        entry = self.entries.get(name)
        if entry is None or not self._current(entry):
            return None
        spec = ModuleSpec(name, self, origin=entry[0], is_package=entry[2])
        spec.has_location = True  # __file__ is the source: tracebacks and data files as before
        spec.loader_state = SERVED
        if entry[2]:
            spec.submodule_search_locations = [os.path.dirname(entry[0])]
        return spec

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        loader = SourceFileLoader(module.__name__, module.__file__)
        module.__loader__ = module.__spec__.loader = loader  # every other loader method, as normal
        code = self.code(module.__name__)
        if code is None:  # damaged since it was written: this module from its source, the file anew
            self.stale = True
            return loader.exec_module(module)
        exec(code, module.__dict__)
        return None

    def code(self, name, marshalled=False):
        """The code object of module `name` (its marshal bytes), or None when the file lacks it."""
        offset, length = self.entries[name][3:5]
        try:
            data = os.pread(self.fd, length, self.blobs_at + offset)
            code = marshal.loads(data) if len(data) == length else None
        except Exception:  # whatever marshal makes of damage (EOFError, ValueError, TypeError)
            return None
        return (data if marshalled else code) if type(code) is CODE else None

    def _current(self, entry):
        try:
            same = (entry[0].startswith(self.package_root + os.sep) and file_identity(entry[0]) == entry[1]
                    and all(self._directory_kept(directory, identity) for directory, identity in entry[5]))
        except (OSError, TypeError, ValueError):
            same = False
        self.stale = self.stale or not same
        return same

    def _directory_kept(self, directory, identity):
        kept = self._directories.get(directory)
        if kept is None:
            kept = self._directories[directory] = file_identity(directory) == identity
        return kept


def searched_directories(origin, is_package):
    """The directories whose listing decides what a normal import of `origin` finds: its own,
    and for a package's __init__.py the one that holds the package too."""
    directory = os.path.dirname(origin)
    return (directory, os.path.dirname(directory)) if is_package else (directory,)


def install(launcher_file, package_dir):
    """Put the bundle beside launcher_file first on sys.meta_path (one with no modules when the
    file is absent, foreign or unreadable: refresh() then writes it)."""
    path = bundle_path(os.path.dirname(os.path.abspath(launcher_file)))
    bundle = Bundle(path, os.path.join(os.path.abspath(package_dir), PACKAGE))
    if os.path.dirname(os.path.abspath(__file__)) != bundle.package_root or not _own_directory(path):
        return None  # this package came from elsewhere (never mix two installs), or others may write there
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
    if header != HEADER + (bundle.package_root,) or not isinstance(entries, dict):
        os.close(fd)
        return
    bundle.fd, bundle.blobs_at = fd, len(MAGIC) + 4 + size
    bundle.entries = {name: entry for name, entry in entries.items() if _well_formed(name, entry)}


def _well_formed(name, entry):
    return (isinstance(name, str) and name.startswith(PACKAGE + ".") and isinstance(entry, tuple) and len(entry) == 6
            and isinstance(entry[0], str) and type(entry[3]) is int and type(entry[4]) is int
            and isinstance(entry[5], tuple))


def _trusted(st, kind=0o100000):
    """A regular file (or a directory, by kind) of this user's that only this user may write."""
    return (st.st_mode & 0o170000) == kind and st.st_uid == os.geteuid() and not st.st_mode & 0o022


def _own_directory(path):
    """Whether the directory of `path` is this user's and nobody else may write there: whoever
    may could replace the file (and the launcher beside it)."""
    try:
        return _trusted(os.stat(os.path.dirname(path)), kind=0o040000)
    except OSError:
        return False


def refresh():
    """Write the bundle again when this run imported a module of the package that it did not
    serve (new to it, or changed since): from the modules this run has and the entries still
    current. Called right before the process exits (after a fast command's output is flushed):
    while it writes, SIGINT and SIGTERM stay blocked (a Ctrl-C then is the exit's, never a
    traceback of a cache). It never raises and never prints, and leaves alone a launcher dir
    it could not write (no compiling on every run to fail at the end)."""
    bundle = next((finder for finder in sys.meta_path if isinstance(finder, Bundle)), None)
    if bundle is None:
        return
    try:
        sources = _package_sources(bundle)
        unserved = [name for name in sources if getattr(sys.modules[name].__spec__, "loader_state", None) != SERVED]
        if (unserved or bundle.stale) and _writable(bundle, sources):
            import signal

            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
            _write(bundle, sources)
    except Exception:  # a cache: whatever goes wrong, the next run imports the normal way
        pass


def _writable(bundle, sources):
    """Whether a new file can be written: the directory is ours to write, no directory sits at
    the file's path, and the filesystem has room for it twice over (a full disk must not cost
    every later command a compile of every module)."""
    directory = os.path.dirname(bundle.path)
    if not os.access(directory, os.W_OK) or os.path.isdir(bundle.path):
        return False
    old = os.fstat(bundle.fd).st_size if bundle.fd is not None else 0
    wanted = 2 * (old + sum(os.stat(origin).st_size for origin in sources.values()))
    free = os.statvfs(directory)
    return free.f_bavail * free.f_frsize > wanted


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

    kept = {}  # name -> ((source, identity, is a package, directories), marshalled code)
    for name, entry in bundle.entries.items():
        blob = bundle.code(name, marshalled=True) if bundle._current(entry) else None
        if blob is not None:
            kept[name] = (entry[:3] + entry[5:], blob)
    for name, origin in sources.items():
        if name not in kept:
            kept[name] = _compiled(name, origin)
    index, blobs, offset = {}, [], 0
    for name, (about, blob) in kept.items():
        index[name] = about[:3] + (offset, len(blob)) + about[3:]
        blobs.append(blob)
        offset += len(blob)
    head = marshal.dumps((HEADER + (bundle.package_root,), index))
    data = b"".join([MAGIC, len(head).to_bytes(4, "little"), head] + blobs)
    if len(data) <= MAX_BYTES:
        replace_regular(bundle.path, data, mode=0o600, own_file=True)
        os.chmod(bundle.path, 0o600)  # an old file's looser bits are kept by replace_regular
        _remove_other_versions(bundle.path)


def _compiled(name, origin):
    """((source, identity, is a package, directories), marshalled code) of one module. Every
    identity is taken before the source is read: a change while reading shows at the next run.
    Warnings are the normal import's to show (it just compiled the same source)."""
    import warnings

    is_package = hasattr(sys.modules[name], "__path__")
    directories = tuple((directory, file_identity(directory))
                        for directory in searched_directories(origin, is_package))
    identity = file_identity(origin)
    with open(origin, "rb") as handle, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = compile(handle.read(), origin, "exec", dont_inherit=True)
    return (origin, identity, is_package, directories), marshal.dumps(code)


def _remove_other_versions(path):
    """The files an interpreter upgraded in place left (its version is in their names)."""
    directory, own = os.path.split(path)
    for name in os.listdir(directory):
        if name != own and name.startswith("code-") and name.endswith(".marshal"):
            os.unlink(os.path.join(directory, name))
