"""Spack install trees (`spack install cuda@12.4.1`, a user's own Spack, its upstreams), read from
Spack's database `<root>/.spack-db/index.json` (versions 6-8 agree on a node's name, version and
external); nothing is run: `spack find` starts a Python that takes seconds. A record counts when it
is installed, not deprecated, not external and its prefix is there. Every install_tree root any
config scope names is searched (which scope wins changed in Spack 1.1), and `$spack/opt/spack`.
"""

import json
import os
import re

from cudaswitch.cache import warn
from cudaswitch.pathsearch import which
from cudaswitch.registry.sources import Candidate, Scan
from cudaswitch.safeio import Unreadable, read_regular

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

NAME = "spack"
DESCRIPTION = "Spack install trees of $SPACK_ROOT or the spack on PATH (config.yaml roots, upstreams.yaml)"
PACKAGES = ("cuda",)
DB_VERSIONS = ("6", "7", "8")
DEFAULT_ROOT = "$spack/opt/spack"
CONFIG_LIMIT = 1 << 20
INDEX_LIMIT = 256 << 20  # a site's database of thousands of specs is tens of MiB
VARIABLE = re.compile(r"\$(?:(\w+)|\{(\w+)\})")
VERSION = re.compile(r"\d+(\.\d+){0,3}")
KEY = re.compile(r"""(?P<key>'[^']*'|"[^"]*"|[^'"\s#].*?)\s*::?(?:\s+(?P<value>.*))?$""")
# A # after a blank starts a comment; one inside a quoted value cuts it, which then fails as unclosed.
COMMENT = re.compile(r"(?:^|\s)#.*")
OPAQUE = ("opaque",)  # a value this reader does not parse: a list, block scalar, flow collection, anchor


def find(scan: Scan) -> "Iterator[Candidate]":
    spack = _instance(scan)
    if spack is None:
        return
    roots = [(DEFAULT_ROOT, spack)]
    for scope in _scopes(scan, spack):
        for name in ("config.yaml", "upstreams.yaml"):
            path = os.path.join(scope, name)
            try:
                roots += [(root, scope) for root in _roots_named(scan, path)]
            except Unreadable as exc:
                warn("cannot read the Spack config %s because %s; the other scopes' roots and %s are searched"
                     % (path, exc, DEFAULT_ROOT), "info")
    seen = set()
    for text, base in roots:
        root = _expand(scan, text, spack, base)
        if root is None:
            warn("cannot resolve the Spack install tree %s (a variable this reader does not know); not searched"
                 % ascii(text), "info")
        elif os.path.realpath(scan.env_path(root)) not in seen:
            seen.add(os.path.realpath(scan.env_path(root)))
            yield from _installed(scan, root)


def _instance(scan: Scan) -> "str | None":
    """$spack: $SPACK_ROOT (setup-env.sh sets it), else the one whose bin/spack is on PATH (never run)."""
    if scan.env.get("SPACK_ROOT"):
        return scan.env["SPACK_ROOT"]
    found = which("spack", scan.env)
    bin_dir = os.path.dirname(os.path.realpath(found)) if found else ""
    return scan.paths.unhost(os.path.dirname(bin_dir)) if os.path.basename(bin_dir) == "bin" else None


def _scopes(scan: Scan, spack: str) -> "list[str]":
    """defaults, the instance's own (etc/spack; from 1.1 also etc/spack/site), system and user."""
    scopes = [spack + "/etc/spack/defaults", spack + "/etc/spack", spack + "/etc/spack/site"]
    if not scan.env.get("SPACK_DISABLE_LOCAL_CONFIG"):
        scopes.append(scan.env.get("SPACK_SYSTEM_CONFIG_PATH") or "/etc/spack")
        scopes.append(scan.env.get("SPACK_USER_CONFIG_PATH") or os.path.join(scan.env.get("HOME", "/"), ".spack"))
    return scopes


def _roots_named(scan: Scan, path: str) -> "list[str]":
    """The roots config.yaml (`config: install_tree: root:`; before Spack 0.16 `install_tree:`
    itself) or upstreams.yaml (`upstreams: NAME: install_tree:`) names; Unreadable if it cannot tell."""
    scan.watch(scan.env_path(path))
    try:
        tree = parse_blocks(_read(scan.env_path(path), CONFIG_LIMIT).decode("utf-8"))
    except FileNotFoundError:
        return []
    except UnicodeDecodeError:
        raise Unreadable("it is not UTF-8 text") from None
    if path.endswith("upstreams.yaml"):
        upstreams = _at(tree, "upstreams") or {}
        values = [_at(upstreams, name, "install_tree") for name in list(upstreams)]
    else:
        install_tree = _at(tree, "config", "install_tree")
        values = [_at(install_tree, "root") if isinstance(install_tree, dict) else install_tree]
    if any(value is not None and not isinstance(value, str) for value in values):
        raise Unreadable("an install_tree there is not a plain path")
    return [value for value in values if value]


def _at(node: "Any", *keys: str) -> "Any":
    """node[key][key]..., None where one is absent; Unreadable where the way is not a mapping."""
    for key in keys:
        if node is None:
            return None
        if not isinstance(node, dict):
            raise Unreadable("%s is not under a plain mapping" % key)
        node = node.get(key)
    return node


def _read(path: str, limit: int) -> bytes:
    data = read_regular(path, limit)  # FileNotFoundError, or Unreadable for what is not a file
    if len(data) > limit:
        raise Unreadable("it is larger than %d MiB" % (limit >> 20))
    return data


def _expand(scan: Scan, text: str, spack: str, base: str) -> "str | None":
    """A root as Spack reads one: its variables ($spack, $user; any case), then environment
    variables, then ~; relative to the dir of the file naming it. None when a variable is left."""
    def value(match: "re.Match[str]") -> str:
        name = match.group(1) or match.group(2)
        own = {"spack": spack, "user": scan.env.get("USER") or scan.env.get("LOGNAME")}
        found = own.get(name.lower()) if name.lower() in own else scan.env.get(name)
        return found or match.group(0)

    path = VARIABLE.sub(value, text)
    if path == "~" or path.startswith("~/"):
        path = scan.env.get("HOME", "~") + path[1:]
    if "$" in path or path.startswith("~"):
        return None
    return os.path.normpath(os.path.join(base, path))


def _installed(scan: Scan, root: str) -> "Iterator[Candidate]":
    index = os.path.join(root, ".spack-db", "index.json")
    scan.watch(scan.env_path(index))  # `spack install` and `spack uninstall` replace it
    try:
        installs = _database(scan.env_path(index))
    except FileNotFoundError:
        return
    except Unreadable as exc:
        warn("cannot read the Spack database %s because %s; its toolkits are not listed" % (index, exc), "info")
        return
    for key, record in installs.items():
        spec = record.get("spec") if isinstance(record, dict) else None
        if not isinstance(spec, dict) or spec.get("name") not in PACKAGES or spec.get("external"):
            continue
        path, version = record.get("path"), spec.get("version")
        if record.get("installed") is not True or record.get("deprecated_for") or not str(path).startswith("/"):
            continue
        prefix = scan.env_path(path)
        scan.watch(prefix)  # removed by hand, or put back
        if os.path.isdir(prefix):
            hint = version if isinstance(version, str) and VERSION.fullmatch(version) else None
            yield Candidate(prefix, NAME, "%s@%s/%s" % (spec["name"], hint or "?", key[:7]), hint_version=hint)


def _database(path: str) -> dict:
    try:
        document = json.loads(_read(path, INDEX_LIMIT))
    except (ValueError, RecursionError):
        raise Unreadable("it is not JSON") from None
    database = document.get("database") if isinstance(document, dict) else None
    if not isinstance(database, dict) or not isinstance(database.get("installs"), dict):
        raise Unreadable("it is not a Spack database (no database.installs)")
    version = ascii(str(database.get("version")))[1:-1][:20]
    if version not in DB_VERSIONS:
        raise Unreadable("its version is '%s' (%s are read)" % (version, ", ".join(DB_VERSIONS)))
    return database["installs"]


# No YAML library is a dependency, and only a few keys are wanted: this reads block mappings
# strictly and marks anything else (lists, block scalars, flow collections, anchors, tags) as
# OPAQUE, so a value that matters and is not a plain scalar is refused, never guessed.
def parse_blocks(text: str) -> dict:
    """The block mappings of a YAML text as nested dicts of strings (None: empty or null); Unreadable
    for a tab in the indentation, a line not `key: value` under a key above, a key given twice."""
    root: dict = {}
    stack: "list[tuple[int, dict]]" = [(0, root)]  # (indentation of its keys, mapping)
    pending: "tuple[int, dict, str] | None" = None  # a key whose value is on the lines below
    skip = -1  # lines indented deeper than this belong to an OPAQUE value
    for number, raw in enumerate(text.splitlines(), 1):
        line = COMMENT.sub("", raw).rstrip()
        body = line.lstrip(" ")
        indent = len(line) - len(body)
        if not body or body in ("---", "..."):
            continue
        if body[0] == "\t":
            raise Unreadable("line %d is indented with a tab" % number)
        if skip >= 0 and (indent > skip or (indent == skip and body[0] == "-")):
            continue
        skip = -1
        if pending:
            at, mapping, key = pending
            pending = None
            if body[0] == "-" and indent >= at:  # a list, under its key or at the key's own indentation
                mapping[key], skip = OPAQUE, at
                continue
            if indent > at:
                mapping[key] = {}
                stack.append((indent, mapping[key]))
        while len(stack) > 1 and indent < stack[-1][0]:
            stack.pop()
        match = KEY.match(body)
        if indent != stack[-1][0] or not match:
            raise Unreadable("line %d is not `key: value` under a key above" % number)
        key, value = match.group("key").strip("'\""), (match.group("value") or "").strip()
        mapping = stack[-1][1]
        if key in mapping:
            raise Unreadable("line %d gives %s a second time" % (number, ascii(key[:20])))
        mapping[key] = _scalar(value, number)
        if not value:
            pending = (indent, mapping, key)
        elif mapping[key] is OPAQUE:
            skip = indent
    return root


def _scalar(value: str, number: int) -> "Any":
    if not value or value in ("~", "null", "Null", "NULL"):
        return None
    if value[0] in "|>[{&*!":
        return OPAQUE
    if value[0] in "'\"":
        if len(value) < 2 or value[-1] != value[0] or (value[0] == '"' and "\\" in value):
            raise Unreadable("line %d has a quoted value this reader does not take" % number)
        return value[1:-1].replace("''", "'") if value[0] == "'" else value[1:-1]
    return value
