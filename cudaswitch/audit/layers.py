"""An image's layers applied in order, whiteouts included, to a tree kept in memory.

Each member is checked before it counts: relative names without `..`; only files, dirs, symlinks
and hardlinks (no devices, FIFOs or sparse files); never written through a symlink; links climbing
above the root refused; tar headers bounded before tarfile parses them (tarsafe.py). Names, members,
kept bytes and what a compressed layer expands to are bounded (a gzip bomb stops early). A layer's
digest is checked as it streams; the caller uses the tree only once every layer matched.
"""

import collections
import contextlib
import hashlib
import tarfile
import zlib
from typing import IO, Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, cast

from cudaswitch import tarsafe
from cudaswitch.audit import viewrules
from cudaswitch.audit.toolkitfiles import find_banner
from cudaswitch.audit.oci import ImageError, Layer

# The whole image's budget, over every layer as applied (a layer listed twice counts twice). Real
# CUDA images are far below: nvidia/cuda 12.x cudnn-devel ~15 layers, ~10 GiB, ~100,000 members,
# ~10,000 dirs, ~5,000 links; NGC PyTorch ~30 GiB. A million links or dirs took 600-700 MiB and
# minutes; reaching any limit costs under 10 s and 200 MiB (bench/hostile_images.py).
BUDGET = {"expanded bytes": (64 << 30, "expands to more than %s"), "members": (1_000_000, "has more than %s files"),
          "dirs": (200_000, "has more than %s directories"), "links": (100_000, "has more than %s links"),
          # names are most of the tree's memory (real images: ~10 MiB)
          "name bytes": (64 << 20, "has more than %s of file names")}
MAX_DEPTH = 128
MAX_KEPT = 128 << 20  # bytes of content the view may hold in all
EXPAND_FLOOR = 256 << 20  # a compressed layer may always expand this far...
EXPAND_RATIO = 200  # ...and beyond it at most 200 times its compressed size (real layers: 2-10)
OPAQUE = ".wh..wh..opq"
WHITEOUT = ".wh."
LINK_HOPS = 40


class Node:
    """One entry of the image's filesystem: kind dir | file | link; `layer` is the one that made it."""

    __slots__ = ("kind", "layer", "mode", "size", "data", "target", "children")

    def __init__(self, kind: str, layer: int, mode: int = 0o755, size: int = 0, data: Optional[bytes] = None,
                 target: Optional[str] = None) -> None:
        self.kind, self.layer, self.mode, self.size, self.data, self.target = kind, layer, mode, size, data, target
        # None on files and links; read only where kind is "dir"
        self.children: Dict[str, Node] = {} if kind == "dir" else None  # type: ignore[assignment]


class Tree:
    """The merged filesystem of the layers applied so far."""

    def __init__(self) -> None:
        self.root = Node("dir", -1)
        self.spent = dict.fromkeys(BUDGET, 0)
        self.kept_bytes = 0

    def charge(self, what: str, amount: int = 1) -> None:
        """Counts `amount` against the image's budget (BUDGET); past it, the image is refused."""
        self.spent[what] += amount
        limit, over = BUDGET[what]
        if self.spent[what] > limit:
            size = "%d GiB" % (limit >> 30) if limit >= 1 << 30 else "%d MiB" % (limit >> 20)
            raise ImageError("the image %s (a real CUDA image has far fewer): refused" % (
                over % (size if what.endswith("bytes") else "{:,}".format(limit))))

    def parent_of(self, parts: Sequence[str], what: str, layer: int) -> Node:
        """The dir holding parts[-1], missing parents made (as tar does); never through a link."""
        node = self.root
        for index, name in enumerate(parts[:-1]):
            child = node.children.get(name)
            if child is not None and child.kind == "link":
                raise ImageError("%s: %s is written through the link /%s" % (what, "/".join(parts),
                                                                              "/".join(parts[:index + 1])))
            if child is None:
                self.charge("name bytes", len(name))  # names are most of the tree's memory
            if child is None or child.kind != "dir":
                self.charge("dirs")
                child = node.children[name] = Node("dir", layer)
            node = child
        return node

    def lookup(self, parts: Sequence[str]) -> Optional[Node]:
        node = self.root
        for name in parts:
            child = node.children.get(name) if node.kind == "dir" else None
            if child is None:
                return None
            node = child
        return node

    def put(self, parts: Sequence[str], node: Node, what: str) -> None:
        parent = self.parent_of(parts, what, node.layer)
        old = parent.children.get(parts[-1])
        if old is None:
            self.charge("name bytes", len(parts[-1]))
        if node.kind == "dir" and old is not None and old.kind == "dir":
            old.mode, old.layer = node.mode, node.layer  # a directory entry again: contents merge
            return
        if node.kind == "dir":
            self.charge("dirs")
        parent.children[parts[-1]] = node

    def whiteout(self, parts: Sequence[str], layer: int, what: str) -> None:
        """`.wh.NAME` hides NAME of lower layers; `.wh..wh..opq` everything lower in its directory."""
        parent = self.parent_of(parts, what, layer)
        name = parts[-1]
        if name == OPAQUE:
            _prune_lower(parent, layer)
            return
        hidden = name[len(WHITEOUT):]
        if hidden.startswith(WHITEOUT) or hidden in ("", ".", ".."):
            return  # aufs bookkeeping (.wh..wh.plnk and the like): nothing to hide
        old = parent.children.get(hidden)
        if old is not None and old.layer < layer:
            del parent.children[hidden]


def _prune_lower(directory: Node, layer: int) -> None:
    for name, child in list(directory.children.items()):
        if child.layer < layer:
            del directory.children[name]
        elif child.kind == "dir":
            _prune_lower(child, layer)


def member_parts(name: str, what: str) -> List[str]:
    """A member name as path components; absolute names and `..` are refused."""
    if name.startswith("/") or "\x00" in name:
        raise ImageError("%s: member %s has an absolute name" % (what, shown(name)))
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ImageError("%s: member %s climbs out with '..'" % (what, shown(name)))
    if len(parts) > MAX_DEPTH:
        raise ImageError("%s: member %s is nested more than %d levels" % (what, shown(name[:200]), MAX_DEPTH))
    return parts


def link_target_parts(parts: Sequence[str], target: str, what: str) -> List[str]:
    """Where a symlink points, as image path components; a target climbing above the root is refused."""
    if not target or "\x00" in target:
        raise ImageError("%s: link %s has no target" % (what, shown("/".join(parts))))
    start = [] if target.startswith("/") else list(parts[:-1])
    for piece in target.split("/"):
        if piece == "..":
            if not start:
                raise ImageError("%s: link /%s -> %s leaves the image" % (what, shown("/".join(parts)),
                                                                         shown(target)))
            start.pop()
        elif piece not in ("", "."):
            start.append(piece)
    return start


def shown(text: str, limit: int = 80) -> str:
    text = "".join(c if " " <= c != "\x7f" else "?" for c in text)
    return text if len(text) <= limit else text[:limit] + "..."


class Reader:
    """A layer's stored bytes: counted, hashed when the digest is over them, at most `size` read."""

    def __init__(self, raw: IO[bytes], digest: str, size: Optional[int], over: str, label: str) -> None:
        self.raw, self.size, self.label, self.count = raw, size, label, 0
        self.hash = hashlib.new(digest.split(":")[0]) if over == "stored" else None

    def read(self, n: int) -> bytes:
        if self.size is not None:
            n = min(n, self.size + 1 - self.count)
        data = self.raw.read(n)
        self.count += len(data)
        if self.size is not None and self.count > self.size:
            raise ImageError("%s is larger than its manifest says (%d bytes)" % (self.label, self.size))
        if self.hash is not None:
            self.hash.update(data)
        return data


class Expanded:
    """The tar inside a layer: gunzipped, hashed when the digest is over the tar, stopped past what
    a real layer expands to. A read gives the next piece (tarfile's stream reads until it has all)."""

    def __init__(self, stored: Reader, digest: str, over: str, label: str, tree: Tree) -> None:
        self.stored, self.label, self.count, self.tree = stored, label, 0, tree
        self.hash = hashlib.new(digest.split(":")[0]) if over == "uncompressed" else None
        head = stored.read(4)
        if head[:4] == b"\x28\xb5\x2f\xfd":
            raise ImageError("%s is zstd-compressed, which this audit cannot read" % label)
        self.gzip = head[:2] == b"\x1f\x8b"
        self.pieces = self._gunzip(head) if self.gzip else self._plain(head)

    def read(self, n: int = -1) -> bytes:
        data = next(self.pieces, b"")
        self.count += len(data)
        self.tree.charge("expanded bytes", len(data))
        if self.gzip and self.count > EXPAND_FLOOR and self.count > EXPAND_RATIO * self.stored.count:
            raise ImageError("%s expands more than %d times its size: a compression bomb, not a layer"
                             % (self.label, EXPAND_RATIO))
        if self.hash is not None:
            self.hash.update(data)
        return data

    def _plain(self, data: bytes) -> Iterator[bytes]:
        while data:
            yield data
            data = self.stored.read(1 << 20)

    def _gunzip(self, data: bytes) -> Iterator[bytes]:
        """Non-empty inflated pieces; concatenated gzip members are valid, zero padding is ignored."""
        inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
        while data or (data := self.stored.read(1 << 16)):
            if inflate.eof and not data.strip(b"\0"):
                data = b""
                continue
            if inflate.eof:
                inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
            try:
                piece = inflate.decompress(data, 1 << 20)
            except zlib.error as exc:
                raise ImageError("%s is not valid gzip (%s)" % (self.label, exc)) from None
            data = inflate.unconsumed_tail or inflate.unused_data
            if piece:
                yield piece


def _drain(stream: "Reader | Expanded") -> None:
    while stream.read(1 << 20):
        pass


def apply_layers(tree: Tree, listed: List[Layer], progress: Callable[[str, int, int], None]) -> None:
    """Every layer applied in order; a blob listed again replays its first reading's ops, unread."""
    keys = [(layer.digest, layer.size, layer.over) for layer in listed]
    again = {key for key, count in collections.Counter(keys).items() if count > 1}
    done: Dict[tuple, Tuple[Any, int]] = {}  # (ops, bytes): ops a list wherever the key is in `again`
    for number, (layer, key) in enumerate(zip(listed, keys), 1):
        progress("reading layers", number - 1, len(listed))
        if key in done:
            ops, expanded = done[key]
            tree.charge("expanded bytes", expanded)
            for op in ops:
                tree.charge("members")
                apply_op(tree, op, number, layer.label)
        else:
            ops = [] if key in again else None
            done[key] = (ops, apply_layer(tree, layer, number, ops))
    progress("reading layers", len(listed), len(listed))


def apply_layer(tree: Tree, layer: Layer, number: int, ops: Optional[List[tuple]] = None) -> int:
    """Apply one layer (its ops appended to `ops`), digest checked; the bytes it expanded to. A layer
    that fails to parse is first checked against its digest: an altered blob is named so."""
    try:
        with layer.open() as raw:
            stored = Reader(raw, layer.digest, layer.size, layer.over, layer.label)
            expanded = Expanded(stored, layer.digest, layer.over, layer.label, tree)
            try:
                tar = tarfile.open(fileobj=cast(IO[bytes], expanded), mode="r|", bufsize=1 << 20,  # read() only
                                   tarinfo=tarsafe.BoundedInfo)
                _members(tree, tar, layer.label, number, ops)
                _drain(expanded)
            except (tarfile.TarError, EOFError, zlib.error, ImageError, tarsafe.HeaderRefused) as exc:
                _check_digest(layer, stored)
                if isinstance(exc, ImageError):
                    raise
                if isinstance(exc, tarsafe.HeaderRefused):
                    raise ImageError("%s: %s" % (layer.label, exc)) from None
                why = str(exc)[:120] or type(exc).__name__
                raise ImageError("%s is not a readable tar (%s)" % (layer.label, why)) from None
            _drain(stored)
    except OSError as exc:
        raise ImageError("%s cannot be read (%s)" % (layer.label, exc.strerror or exc)) from None
    _check_digest(layer, stored, expanded)
    return expanded.count


def _check_digest(layer: Layer, stored: Reader, expanded: Optional[Expanded] = None) -> None:
    """An ImageError unless the layer has its size and digest (without `expanded`: the stored digest)."""
    if expanded is None and stored.hash is None:
        return
    if expanded is None:
        with contextlib.suppress(ImageError):  # larger than its descriptor: the digest cannot match either
            _drain(stored)
    if layer.size is not None and stored.count < layer.size:
        raise ImageError("%s is truncated: %d of %d bytes" % (layer.label, stored.count, layer.size))
    if layer.size is not None and stored.count > layer.size:
        raise ImageError("%s is larger than its manifest says (%d bytes)" % (layer.label, layer.size))
    # over the stored bytes, else over the tar (without `expanded`, there is the first)
    check = cast("hashlib._Hash", stored.hash or cast(Expanded, expanded).hash)
    if "%s:%s" % (check.name, check.hexdigest()) != layer.digest:
        raise ImageError("%s does not match its digest (a damaged or altered blob)" % layer.label)


def _members(tree: Tree, tar: tarfile.TarFile, label: str, number: int, ops: Optional[List[tuple]]) -> None:
    for member in iter(tar.next, None):
        tar.members = []  # type: ignore[attr-defined]  # tarfile keeps every header it read; the tree is what we keep
        tree.charge("members")
        parts = member_parts(member.name, label)
        if parts:
            op = _op(tree, tar, member, parts, label, number)
            if ops is not None:
                ops.append(op)
            apply_op(tree, op, number, label)


def _op(tree: Tree, tar: tarfile.TarFile, member: tarfile.TarInfo, parts: List[str], label: str,
        number: int) -> tuple:
    """What a member does to the tree, checked, as (kind, parts, ...) for apply_op."""
    if parts[-1].startswith(WHITEOUT):
        return ("whiteout", parts)
    if member.isdir():
        return ("dir", parts)
    if member.issym():
        link_target_parts(parts, member.linkname, label)
        return ("link", parts, member.linkname)
    if member.islnk():
        return ("hardlink", parts, member_parts(member.linkname, label))
    if member.issparse():
        raise ImageError("%s: member /%s is a sparse file" % (label, shown("/".join(parts))))
    if member.isreg():
        node = _file_node(tree, tar, member, parts, label, number)
        return ("file", parts, node.mode, node.size, node.data)
    raise ImageError("%s: member /%s is a device, FIFO or other special file" % (label, shown("/".join(parts))))


def apply_op(tree: Tree, op: tuple, number: int, label: str) -> None:
    kind, parts = op[0], op[1]
    if kind == "whiteout":
        tree.whiteout(parts, number, label)
    elif kind == "dir":
        tree.put(parts, Node("dir", number), label)
    elif kind == "link":
        tree.charge("links")
        tree.put(parts, Node("link", number, target=op[2]), label)
    elif kind == "hardlink":
        tree.charge("links")
        source = tree.lookup(op[2])
        if source is None or source.kind != "file":
            raise ImageError("%s: hardlink /%s points at no file" % (label, shown("/".join(parts))))
        tree.put(parts, Node("file", number, source.mode, 0, source.data), label)  # one inode: counted once
    else:
        tree.put(parts, Node("file", number, *op[2:]), label)


def _file_node(tree: Tree, tar: tarfile.TarFile, member: tarfile.TarInfo, parts: List[str], label: str,
               number: int) -> Node:
    """The file as the tree keeps it: its content where the view reads it (viewrules.kind_of), b""
    where its name is the fact (or it is larger than the audit reads), None elsewhere."""
    how = viewrules.kind_of(parts) or ("none",)
    data: Optional[bytes] = None if how[0] == "none" else b""
    if how[0] == "banner" and member.size > how[1]:
        raise ImageError("%s: /%s is %d bytes, more than any nvcc" % (label, shown("/".join(parts)), member.size))
    if how[0] == "content" and member.size > how[1] and how[2]:
        raise ImageError("%s: /%s is %d bytes, more than such a file holds (%d)"
                         % (label, shown("/".join(parts)), member.size, how[1]))
    if how[0] in ("banner", "content") and member.size <= how[1]:
        stream = cast(IO[bytes], tar.extractfile(member))  # a regular file
        data = find_banner(stream, member.size) if how[0] == "banner" else stream.read(member.size)
    if data:
        tree.kept_bytes += len(data)
        if tree.kept_bytes > MAX_KEPT:
            raise ImageError("the files the audit reads exceed %d MiB in all" % (MAX_KEPT >> 20))
    return Node("file", number, 0o755 if member.mode & 0o111 else 0o644, member.size, data)


def resolve(tree: Tree, parts: Sequence[str]) -> Optional[List[str]]:
    """Image path components after following every link as the container would; None for a loop."""
    done: List[str] = []
    pending, hops = list(parts), 0
    while pending:
        name = pending.pop(0)
        node = tree.lookup(done + [name]) if name not in ("", ".", "..") else None
        if node is not None and node.kind == "link":
            hops += 1
            if hops > LINK_HOPS:
                return None
            target = cast(str, node.target)  # a link has one
            done = [] if target.startswith("/") else done
            pending = target.split("/") + pending
        elif name == ".." and done:
            done.pop()
        elif name not in ("", ".", ".."):
            done.append(name)
    return done


def size_under(tree: Tree, path: str) -> int:
    """Bytes of the files under an image path (apparent sizes, hardlinks once)."""
    node = tree.lookup([p for p in path.split("/") if p])
    total, stack = 0, [node] if node is not None else []
    while stack:
        current = stack.pop()
        if current.kind == "dir":
            stack.extend(current.children.values())
        elif current.kind == "file":
            total += current.size
    return total
