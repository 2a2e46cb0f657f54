"""Site installs: a toolkit in a shared prefix (`install --prefix /opt/cuda/12.4`) and modulefiles
in Lmod's Lua and Environment Modules' Tcl (`--modulefile DIR` -> DIR/cuda/12.4.lua, DIR/cuda/12.4).
The prefix carries `.cudaswitch-install.json` (what made it, which modulefiles), so `uninstall`
removes only what cudaswitch made; the managed dir gets a link `<release>@<prefix path>` to it, so
the managed source finds it for its installer and the module source for everyone.
"""

import contextlib
import json
import os
import re
from collections.abc import Callable, Iterable

from cudaswitch.errors import CudaSwitchError, UsageError
from cudaswitch.install.redist import check_release_label
from cudaswitch.safeio import read_or_none, replace_regular

MARKER = ".cudaswitch-install.json"
# Every value goes in through lua_string / tcl_string, never as raw text: a version or a path from
# a mirror must stay a string for Lmod and Environment Modules, which run these files as code for
# every `module avail` of every user of the site.
LUA = """-- CUDA {release_shown}, written by cudaswitch install: prefix {root_shown}, modulefiles {moddir_shown}
help({help})
whatis("Name: CUDA")
whatis({whatis})
family("cuda")
local root = {root}
setenv("CUDA_HOME", root)
setenv("CUDA_PATH", root)
prepend_path("PATH", pathJoin(root, "bin"))
prepend_path("LD_LIBRARY_PATH", pathJoin(root, "lib64"))
"""
TCL = """#%Module1.0
## CUDA {release_shown}, written by cudaswitch install: prefix {root_shown}, modulefiles {moddir_shown}
proc ModulesHelp {{ }} {{
    puts stderr {help}
}}
module-whatis {help}
conflict cuda
set root {root}
setenv CUDA_HOME $root
setenv CUDA_PATH $root
prepend-path PATH $root/bin
prepend-path LD_LIBRARY_PATH $root/lib64
"""
LUA_ROOT_LINES = ("local root = %s", "local root = [==[%s]==]")  # the second: files older cudaswitch wrote
TCL_ROOT_LINES = ("set root %s", "set root {%s}")
MODULEFILE_READ_LIMIT = 64 << 10
UNSAFE_IN_MODULEFILE = re.compile(r"[\]\[{}\"\\$\s;]")


def prefix_target(prefix: str, release: str) -> str:
    """The absolute prefix, refused when something that cudaswitch did not make is there."""
    check_release_label(release, "the release")
    target = os.path.abspath(os.path.expanduser(prefix))
    if UNSAFE_IN_MODULEFILE.search(target):
        raise UsageError("--prefix %r has characters a modulefile cannot quote safely" % prefix)
    if os.path.lexists(target):
        made = read_marker(target)
        if made is None:
            raise CudaSwitchError("%s exists and was not made by cudaswitch" % target,
                                  "choose a new directory for --prefix; nothing was installed")
        if made.get("release") != release:
            raise CudaSwitchError("%s holds CUDA %s, not %s" % (target, made.get("release"), release),
                                  "choose another --prefix; nothing was installed")
    return target


def _small_file(path: str) -> "bytes | None":
    """A regular file of at most MODULEFILE_READ_LIMIT bytes, or None."""
    data = read_or_none(path, MODULEFILE_READ_LIMIT)
    return data if data is not None and len(data) <= MODULEFILE_READ_LIMIT else None


def read_marker(root: str) -> "dict | None":
    """The marker of a tree cudaswitch made, or None (absent, not a regular file, not its JSON)."""
    raw = _small_file(os.path.join(root, MARKER))
    try:
        data = json.loads(raw) if raw is not None else None
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) and data.get("made_by") == "cudaswitch" else None


def write_marker(tree: str, release: str, source: str, modulefiles: "Iterable[str]" = ()) -> None:
    with open(os.path.join(tree, MARKER), "w", encoding="utf-8") as handle:
        json.dump({"made_by": "cudaswitch", "release": release, "source": source,
                   "modulefiles": list(modulefiles)}, handle, indent=2)


def link_into_managed(managed_dir: str, release: str, target: str) -> str:
    """managed_dir/<release>@<prefix> -> prefix, replaced atomically; the temporary link has a
    private name and is gone again whatever happens."""
    check_release_label(release, "the release")
    os.makedirs(managed_dir, exist_ok=True)
    link = os.path.join(managed_dir, "%s@%s" % (release, target.strip("/").replace("/", "-")))
    tmp = os.path.join(managed_dir, ".tmp-link-%d-%s" % (os.getpid(), os.urandom(6).hex()))
    os.symlink(target, tmp)
    try:
        os.replace(tmp, link)
    except BaseException:
        _unlink(tmp)
        raise
    return link


def _unlink(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def modulefile_paths(moddir: str, release: str) -> "tuple[str, str]":
    """(lua, tcl) paths: DIR/cuda/<x.y>.lua and DIR/cuda/<x.y>, so `module load cuda/12.4` works."""
    short = ".".join(check_release_label(release, "the release").split(".")[:2])
    base = os.path.join(os.path.abspath(moddir), "cuda", short)
    return base + ".lua", base


def write_modulefiles(moddir: str, release: str, name: str, root: str) -> "list[str]":
    """Write both modulefiles, refusing to replace one that loads another toolkit; only a regular
    file is replaced (the site's module dir is not cudaswitch's: no FIFO, device, link)."""
    lua, tcl = modulefile_paths(moddir, release)
    for path in (lua, tcl):
        if os.path.lexists(path) and not _loads_root(path, root):
            raise CudaSwitchError("%s exists and loads another toolkit" % path,
                                  "remove it or choose another --modulefile dir")
    os.makedirs(os.path.dirname(lua), exist_ok=True)
    # ascii() has no newline, so no value in a comment line can end the comment early
    shown = {"release_shown": ascii(release), "root_shown": ascii(root), "moddir_shown": ascii(os.path.abspath(moddir))}
    texts = {lua: LUA.format(help=lua_string("NVIDIA CUDA Toolkit " + name), whatis=lua_string("Version: " + release),
                             root=lua_string(root), **shown),
             tcl: TCL.format(help=tcl_string("NVIDIA CUDA Toolkit " + name), root=tcl_string(root), **shown)}
    for path, text in texts.items():
        try:
            replace_regular(path, text.encode("utf-8", "surrogateescape"))
        except OSError as exc:
            raise CudaSwitchError("cannot write the modulefile %s: %s" % (path, exc.strerror or exc),
                                  "the toolkit is installed; write its modulefile by hand or fix the dir") from None
    return [lua, tcl]


# Each byte in a Lua string literal: printable ASCII as is (but \ and "), every other byte as a
# three-digit \ddd (always three digits, so a digit after it is not taken in).
LUA_BYTES = ["\\" + chr(b) if chr(b) in '\\"' else chr(b) if 0x20 <= b < 0x7F else "\\%03d" % b for b in range(256)]


def lua_string(text: str) -> str:
    """A Lua string literal that is `text` byte for byte."""
    return '"' + "".join(LUA_BYTES[byte] for byte in os.fsencode(text)) + '"'


TCL_ESCAPES = {"\\": "\\\\", '"': '\\"', "$": "\\$", "[": "\\[", "]": "\\]", "{": "\\{", "}": "\\}"}


def tcl_string(text: str) -> str:
    """A Tcl word in double quotes that is `text`: \\ " $ [ ] escaped (no substitution can happen),
    braces escaped too (a quoted word inside a braced proc body must not unbalance it), control and
    non-ASCII characters as \\uHHHH (exactly four digits in Tcl 8.5 to 9). A character beyond
    U+FFFF or a byte that is not UTF-8 has no such form: refused."""
    if any(ord(char) > 0xFFFF or "\ud800" <= char <= "\udfff" for char in text):
        raise UsageError("%s cannot be written into a Tcl modulefile (a character beyond U+FFFF or "
                         "a byte that is not UTF-8)" % ascii(text[:60]))
    return '"' + "".join(TCL_ESCAPES.get(c, c if " " <= c < "\x7f" else "\\u%04x" % ord(c)) for c in text) + '"'


def _loads_root(path: str, root: str) -> bool:
    """Whether the modulefile at `path` is one cudaswitch wrote for `root` (its root line: Lua or
    Tcl, in this version's quoting or the bracket form older ones wrote)."""
    data = _small_file(path)
    if data is None:
        return False
    lines = set(data.decode("utf-8", "surrogateescape").splitlines())
    wanted = [LUA_ROOT_LINES[0] % lua_string(root), LUA_ROOT_LINES[1] % root, TCL_ROOT_LINES[1] % root]
    with contextlib.suppress(UsageError):
        wanted.append(TCL_ROOT_LINES[0] % tcl_string(root))
    return any(line in lines for line in wanted)


def remove_site_files(root: str, marker: dict) -> None:
    """The modulefiles a prefix install wrote, where they still load this root."""
    for path in marker.get("modulefiles") or []:
        if isinstance(path, str) and _loads_root(path, root):
            _unlink(path)


def links_to(managed_dir: str, root: str) -> "list[str]":
    """The links in the managed dir that point at `root`."""
    try:
        names = os.listdir(managed_dir)
    except OSError:
        return []
    real = os.path.realpath(root)
    links = [os.path.join(managed_dir, n) for n in names if not n.startswith(".")]
    return [p for p in links if os.path.islink(p) and os.path.realpath(p) == real]


def uninstall_prefix(managed_dir: str, root: str, remove_tree: "Callable[[str], None]") -> None:
    """Remove a prefix install: only one whose marker says cudaswitch made it."""
    marker = read_marker(root)
    if marker is None:
        raise CudaSwitchError("%s was not made by cudaswitch (no %s in it)" % (root, MARKER),
                              "uninstall removes only toolkits made by `cudaswitch install`; nothing was removed")
    remove_tree(root)
    remove_site_files(root, marker)
    for link in links_to(managed_dir, root):
        _unlink(link)

