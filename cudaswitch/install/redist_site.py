"""Site installs: a toolkit in a shared prefix (`install --prefix /opt/cuda/12.4`), modulefiles for
it in Lmod's Lua and Environment Modules' Tcl (`--modulefile DIR` -> DIR/cuda/12.4.lua and
DIR/cuda/12.4), and the records that let `list` show it once and `uninstall` remove only what
cudaswitch made.

A prefix tree carries `.cudaswitch-install.json` (what made it, and which modulefiles); the data
dir's managed dir gets a link `<release>@<prefix path>` to it, so the managed source finds it for
the user who installed it while the module source finds it for everyone.
"""

import json
import os
import re

from cudaswitch.errors import CudaSwitchError, UsageError

MARKER = ".cudaswitch-install.json"
LUA = """-- CUDA {release}, written by `cudaswitch install --prefix {root} --modulefile {moddir}`
help([[NVIDIA CUDA Toolkit {name}]])
whatis("Name: CUDA")
whatis("Version: {release}")
family("cuda")
local root = [==[{root}]==]
setenv("CUDA_HOME", root)
setenv("CUDA_PATH", root)
prepend_path("PATH", pathJoin(root, "bin"))
prepend_path("LD_LIBRARY_PATH", pathJoin(root, "lib64"))
"""
TCL = """#%Module1.0
## CUDA {release}, written by `cudaswitch install --prefix {root} --modulefile {moddir}`
proc ModulesHelp {{ }} {{
    puts stderr "NVIDIA CUDA Toolkit {name}"
}}
module-whatis "NVIDIA CUDA Toolkit {name}"
conflict cuda
set root {{{root}}}
setenv CUDA_HOME $root
setenv CUDA_PATH $root
prepend-path PATH $root/bin
prepend-path LD_LIBRARY_PATH $root/lib64
"""
UNSAFE_IN_MODULEFILE = re.compile(r"[\]\[{}\"\\$\s;]")


def prefix_target(prefix, release):
    """The absolute prefix, refused when something that cudaswitch did not make is there."""
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


def read_marker(root):
    try:
        with open(os.path.join(root, MARKER), encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("made_by") == "cudaswitch" else None


def write_marker(tree, release, source, modulefiles=()):
    with open(os.path.join(tree, MARKER), "w", encoding="utf-8") as handle:
        json.dump({"made_by": "cudaswitch", "release": release, "source": source,
                   "modulefiles": list(modulefiles)}, handle, indent=2)


def link_name(release, target):
    return "%s@%s" % (release, target.strip("/").replace("/", "-"))


def link_into_managed(managed_dir, release, target):
    """managed_dir/<release>@<prefix> -> prefix, replaced atomically."""
    os.makedirs(managed_dir, exist_ok=True)
    link = os.path.join(managed_dir, link_name(release, target))
    tmp = os.path.join(managed_dir, ".tmp-link-%d" % os.getpid())
    os.symlink(target, tmp)
    os.replace(tmp, link)
    return link


def modulefile_paths(moddir, release):
    """(lua, tcl) paths: DIR/cuda/<x.y>.lua and DIR/cuda/<x.y>, so `module load cuda/12.4` works."""
    short = ".".join(release.split(".")[:2])
    base = os.path.join(os.path.abspath(moddir), "cuda", short)
    return base + ".lua", base


def write_modulefiles(moddir, release, name, root):
    """Write both modulefiles; refuses to replace one that loads another toolkit."""
    lua, tcl = modulefile_paths(moddir, release)
    for path in (lua, tcl):
        if os.path.exists(path) and _modulefile_root(path) != root:
            raise CudaSwitchError("%s exists and loads another toolkit" % path,
                                  "remove it or choose another --modulefile dir")
    os.makedirs(os.path.dirname(lua), exist_ok=True)
    values = {"release": release, "name": name, "root": root, "moddir": os.path.abspath(moddir)}
    for path, template in ((lua, LUA), (tcl, TCL)):
        from cudaswitch.paths import atomic_write

        atomic_write(path, template.format(**values).encode("utf-8"))
    return [lua, tcl]


def _modulefile_root(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return None
    match = re.search(r"local root = \[==\[(.*?)\]==\]|set root \{(.*?)\}", text)
    return (match.group(1) or match.group(2)) if match else None


def remove_site_files(root, marker):
    """The modulefiles a prefix install wrote, where they still load this root."""
    for path in marker.get("modulefiles") or []:
        if isinstance(path, str) and _modulefile_root(path) == root:
            try:
                os.unlink(path)
            except OSError:
                pass


def links_to(managed_dir, root):
    """The links in the managed dir that point at `root`."""
    try:
        names = os.listdir(managed_dir)
    except OSError:
        return []
    real = os.path.realpath(root)
    links = [os.path.join(managed_dir, n) for n in names if not n.startswith(".")]
    return [p for p in links if os.path.islink(p) and os.path.realpath(p) == real]


def uninstall_prefix(managed_dir, root, remove_tree):
    """Remove a prefix install: only one whose marker says cudaswitch made it."""
    marker = read_marker(root)
    if marker is None:
        raise CudaSwitchError("%s was not made by cudaswitch (no %s in it)" % (root, MARKER),
                              "uninstall removes only toolkits made by `cudaswitch install`; nothing was removed")
    remove_tree(root)
    remove_site_files(root, marker)
    for link in links_to(managed_dir, root):
        try:
            os.unlink(link)
        except OSError:
            pass

