"""CUDA modulefiles read as text, for a scan that must run nothing it finds (`audit --root` without
`--exec`): a modulefile is a program (`os.execute` in Lua, `exec` in Tcl), and evaluating an image's
would run its code on the auditor. Understood: literal strings, `local NAME = "..."` / `set NAME ...`,
`pathJoin(...)` and `..` (Lua), `$NAME`/`${NAME}` (Tcl), in prepend/append of PATH and
LD_LIBRARY_PATH; any other way to build the directory yields no root (as a failed evaluation).
"""

import os
import re

from cudaswitch.safeio import read_or_none

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

MAX_BYTES = 256 << 10  # modulefiles are a few KiB; a bigger "modulefile" is not one
VARS = ("PATH", "LD_LIBRARY_PATH")
LUA_STRING = re.compile(r'"([^"\\]*)"|\'([^\'\\]*)\'|\[(=*)\[(.*?)\]\3\]', re.S)  # "..", '..', [==[..]==]
MAX_DEPTH = 16  # pathJoin(pathJoin(...)) nested deeper than any real modulefile: not understood
# Matched against one line with its trailing white space cut, so no pattern backtracks across a
# long run of blanks (a 256 KiB padded file stays linear).
LUA_LOCAL = re.compile(r"[ \t]*local[ \t]+(\w+)[ \t]*=[ \t]*(.+)")
LUA_PATH = re.compile(r"[ \t]*(?:prepend_path|append_path)[ \t]*\([ \t]*[\"'](\w+)[\"'][ \t]*,(.+)\)")
TCL_SET = re.compile(r"[ \t]*set[ \t]+(\w+)[ \t]+(\S+)")
TCL_PATH = re.compile(r"[ \t]*(?:prepend-path|append-path)[ \t]+(?:-\S+[ \t]+)*(\w+)[ \t]+(\S+)")


def read(directories: "list[str]", packages: "tuple[str, ...]",
         listdir: "Callable[[str], list[str]]") -> "list[tuple[str, str, dict]]":
    """(module name, modulefile, {"pathA": [...], "lpathA": [...]}) of each CUDA modulefile, from its text."""
    found = []
    for directory in directories:
        for package in listdir(directory):
            if package.lower() not in packages:
                continue
            for name, path in _modulefiles(os.path.join(directory, package), package):
                dirs = dirs_of(path)
                if dirs is not None:
                    found.append((name, path, dirs))
    return found


def _modulefiles(package_dir: str, package: str) -> "Iterator[tuple[str, str]]":
    """(module name, file) below a package dir; dot files (.version, .modulerc) are not modulefiles."""
    for top, dirs, files in os.walk(package_dir):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for file in sorted(f for f in files if not f.startswith(".")):
            path = os.path.join(top, file)
            rel = os.path.relpath(path, package_dir)
            yield package + "/" + (rel[:-4] if rel.endswith(".lua") else rel), path


def dirs_of(path: str) -> "dict[str, list[str]] | None":
    """{"pathA": [...], "lpathA": [...]} a modulefile's text names, or None when it is not one."""
    data = read_or_none(path, MAX_BYTES)  # regular files only: a FIFO in an image never blocks
    if data is None or len(data) > MAX_BYTES:
        return None
    text = data.decode("utf-8", "replace")
    if path.endswith(".lua"):
        pairs = _lua_paths(text)
    elif text.startswith("#%Module"):
        pairs = _tcl_paths(text)
    else:
        return None
    out: "dict[str, list[str]]" = {"pathA": [], "lpathA": []}
    for var, value in pairs:
        if var in VARS and value and value.startswith("/"):
            out["pathA" if var == "PATH" else "lpathA"].append(value)
    return out


def _lines(text: str, pattern: "re.Pattern[str]") -> "Iterator[tuple[str, ...]]":
    """pattern's groups for each line it matches whole (trailing white space cut first)."""
    for line in text.split("\n"):
        match = pattern.fullmatch(line.rstrip())
        if match:
            yield match.groups()


def _lua_paths(text: str) -> "list[tuple[str, str | None]]":
    names: "dict[str, str | None]" = {}
    for name, expression in _lines(text, LUA_LOCAL):
        names[name] = _lua_value(expression, names)
    return [(var, _lua_value(expression, names)) for var, expression in _lines(text, LUA_PATH)]


def _lua_value(expression: str, names: "dict[str, str | None]", depth: int = 0) -> "str | None":
    """The string a small Lua expression gives: literals, known locals, `..`, pathJoin(); else None."""
    expression = expression.strip()
    if depth > MAX_DEPTH:
        return None
    joined = re.fullmatch(r"pathJoin\s*\((.*)\)", expression)
    if joined:
        parts: "list[Any]" = [_lua_value(p, names, depth + 1) for p in _split_args(joined.group(1))]
        return None if None in parts or not parts else "/".join(p.strip("/") if i else p.rstrip("/")
                                                               for i, p in enumerate(parts))
    literal = LUA_STRING.fullmatch(expression)
    if literal:
        return next(g for g in (literal.group(1), literal.group(2), literal.group(4)) if g is not None)
    if ".." in expression:
        parts = [_lua_value(p, names, depth + 1) for p in expression.split("..")]
        return None if None in parts else "".join(parts)
    return names.get(expression) if re.fullmatch(r"\w+", expression) else None


def _split_args(text: str) -> "list[str]":
    """Arguments of a call whose arguments hold no nested call or comma inside a string."""
    return [] if not text.strip() else text.split(",")


def _tcl_paths(text: str) -> "list[tuple[str, str | None]]":
    names: "dict[str, str | None]" = {}
    for name, value in _lines(text, TCL_SET):
        names[name] = _tcl_value(value, names)
    return [(var, _tcl_value(value, names)) for var, value in _lines(text, TCL_PATH)]


def _tcl_value(value: str, names: "dict[str, str | None]") -> "str | None":
    """A Tcl word with $NAME/${NAME} of known literal sets substituted; None for anything else."""
    if len(value) > 1 and value[0] == value[-1] == '"':
        value = value[1:-1]
    if "[" in value or "\\" in value:
        return None

    def known(match: "re.Match[str]") -> str:
        found = names.get(match.group(1) or match.group(2))
        if found is None:
            raise KeyError(match.group(0))
        return found

    try:
        return re.sub(r"\$\{(\w+)\}|\$(\w+)", known, value)
    except KeyError:
        return None
