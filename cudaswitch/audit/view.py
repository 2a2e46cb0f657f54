"""The view: the kept part of an image's filesystem written into a fresh private directory that
the audit of a root reads as the image. Each link is rewritten as the relative path to what it
resolves to in the image (so the kernel stays in the view), its target made to exist; nothing is
written through a link: directories and files first, links last.
"""

import os
import posixpath
from typing import Dict, List, Sequence, Set, Tuple

from cudaswitch.audit import layers, viewrules
from cudaswitch.audit.oci import ImageError

NAME_MAX = 255
PATH_MAX = 4096  # with the terminating NUL: a path or link target of 4096 bytes is already too long


def write_view(tree: layers.Tree, view: str) -> Dict[str, int]:
    """Write the kept part of `tree` under the empty directory `view`; {"files", "links", "bytes"}."""
    files, dirs, links = _collect(tree)
    kept_links: List[Tuple[Sequence[str], str]] = []
    parts: Sequence[str]  # a link's as a list, a dir's or file's as a tuple
    for parts, _node in links:
        if tuple(parts[:-1]) in dirs or viewrules.keeps_link(parts):
            _ancestors(dirs, parts[:-1])
            kept_links.append((parts, _link_text(tree, parts, files, dirs)))
    for parts in list(dirs) + list(files) + [parts for parts, _text in kept_links]:
        _check_path(view, parts)
    for parts, text in kept_links:
        if _size(text) >= PATH_MAX:
            raise ImageError("the link /%s resolves to a target longer than %d bytes" % (
                layers.shown("/".join(parts)), PATH_MAX - 1))
    for parts in sorted(dirs, key=len):
        if parts:
            os.mkdir(os.path.join(view, *parts), 0o755)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    written = 0
    for parts, node in sorted(files.items()):
        with os.fdopen(os.open(os.path.join(view, *parts), flags, node.mode), "wb") as handle:
            written += handle.write(node.data or b"")
    for parts, text in kept_links:
        os.symlink(text, os.path.join(view, *parts))
    return {"files": len(files), "links": len(kept_links), "bytes": written}


def _size(text: str) -> int:
    return len(text.encode("utf-8", "surrogateescape"))


def _check_path(view: str, parts: Sequence[str]) -> None:
    """The image path fits the host's limits once under the view (the kernel would refuse it)."""
    for name in parts:
        if _size(name) > NAME_MAX:
            raise ImageError("the image path /%s has a name longer than %d bytes" % (
                layers.shown("/".join(parts)), NAME_MAX))
    if _size(os.path.join(view, *parts)) >= PATH_MAX:
        raise ImageError("the image path /%s is too long to audit (%d bytes or more under the view)" % (
            layers.shown("/".join(parts)), PATH_MAX))


def _collect(tree: layers.Tree) -> Tuple[Dict[tuple, layers.Node], Set[tuple], List[Tuple[List[str], layers.Node]]]:
    """({parts: kept file node}, {dir parts that must exist}, [(parts, link node)])."""
    files: Dict[tuple, layers.Node] = {}
    dirs: Set[tuple] = {()}
    links: List[Tuple[List[str], layers.Node]] = []
    stack: List[Tuple[tuple, layers.Node]] = [((), tree.root)]
    while stack:
        parts, node = stack.pop()
        for name, child in node.children.items():
            path = parts + (name,)
            if child.kind == "dir":
                if viewrules.keeps_dir(list(path)):
                    _ancestors(dirs, path)
                stack.append((path, child))
            elif child.kind == "link":
                links.append((list(path), child))
            elif child.data is not None:
                files[path] = child
                _ancestors(dirs, path[:-1])
    return files, dirs, links


def _ancestors(dirs: Set[tuple], parts: Sequence[str]) -> None:
    parts = tuple(parts)
    while parts not in dirs:
        dirs.add(parts)
        parts = parts[:-1]


def _link_text(tree: layers.Tree, parts: Sequence[str], files: Dict[tuple, layers.Node], dirs: Set[tuple]) -> str:
    """The link's new relative target, made to exist; a loop stays a loop (a link to itself)."""
    resolved = layers.resolve(tree, parts)
    if resolved is None:
        return parts[-1]
    target = tree.lookup(resolved)
    if target is not None and target.kind == "dir":
        _ancestors(dirs, resolved)
    elif target is not None and target.kind == "file":
        files.setdefault(tuple(resolved), layers.Node("file", target.layer, target.mode, target.size, b""))
        _ancestors(dirs, resolved[:-1])
    here = "/" + "/".join(parts[:-1])
    return posixpath.relpath("/" + "/".join(resolved), here)
