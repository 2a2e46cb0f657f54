"""The nearest project file, walking up: `.cudaversion`, `cuda` in `.tool-versions`, `[tool.cudaswitch]
cuda` in pyproject.toml. Data from a possibly untrusted repository: it may only select among known
toolkits (ToolkitRequest.parse without paths); anything odd is refused in one line naming the file."""

import os

from cudaswitch.errors import BadRequest, ProjectFileError
from cudaswitch.request import ToolkitRequest
from cudaswitch.safeio import Unreadable, parse_toml, quote_prefix, read_regular

MAX_BYTES = 4096
PYPROJECT_MAX_BYTES = 1 << 20
NAMES = (".cudaversion", ".tool-versions", "pyproject.toml")
# For the shell hooks (generated into their text by `init`): (file name, the word its first
# MAX_BYTES must hold for it to matter, whether a match ends the walk up). hook-env decides for real.
HOOK_RULES = ((".cudaversion", "", True), (".tool-versions", "cuda", False), ("pyproject.toml", "cudaswitch", False))


def find(start: str) -> "tuple[str, str] | None":
    """(path, request text) of the nearest project file, or None. Raises ProjectFileError."""
    directory = os.path.abspath(start)
    while True:
        for name in NAMES:
            path = os.path.join(directory, name)
            if os.path.lexists(path):  # a dangling .cudaversion is refused, not passed over
                text = _request_in(path, name)
                if text is not None:
                    return path, text
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def parse_request(path: str, text: str) -> ToolkitRequest:
    """The ToolkitRequest a project file makes; paths and anything but a request are refused."""
    try:
        return ToolkitRequest.parse(text, allow_path=False)
    except BadRequest:
        raise ProjectFileError("refusing %s: %s is not a toolkit version request" % (path, _shown(path, text)),
                               "project files may hold e.g. 12.4, 13 or '>=12.1,<13' only") from None


def _shown(path: str, text: str) -> str:
    """What an error may quote of a file's content: a short escaped prefix, and nothing at all when
    the file is a link that leaves its project (to ~/.git-credentials, /proc/self/environ...)."""
    if not os.path.realpath(path).startswith(os.path.realpath(os.path.dirname(path)) + os.sep):
        return "its content (read through a link leaving the project, not shown)"
    return quote_prefix(text)


def _request_in(path: str, name: str) -> "str | None":
    if name == "pyproject.toml":
        return _from_pyproject(path)
    lines = _read_text(path).splitlines()
    if name == ".tool-versions":
        for line in lines:
            fields = line.split("#", 1)[0].split()
            if len(fields) >= 2 and fields[0] == "cuda":
                return fields[1]
        return None
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if line:
            return line
    raise ProjectFileError("refusing %s: it holds no version" % path, "write e.g. 12.4 into it")


def _read_text(path: str) -> str:
    data = _read_bytes(path, MAX_BYTES)
    if len(data) > MAX_BYTES:
        raise ProjectFileError("refusing %s: larger than %d bytes" % (path, MAX_BYTES))
    if b"\0" in data:
        raise ProjectFileError("refusing %s: it is binary (holds NUL bytes)" % path)
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")  # a Windows editor's byte-order mark
    except UnicodeDecodeError:
        raise ProjectFileError("refusing %s: it is not UTF-8 text" % path) from None
    bad = [c for c in text if (ord(c) < 32 and c not in "\n\r\t") or ord(c) == 127]
    if bad:
        raise ProjectFileError("refusing %s: it holds control character %s" % (path, ascii(bad[0])))
    return text


def _read_bytes(path: str, limit: int) -> bytes:
    """Up to limit + 1 bytes of a regular file. A FIFO or a link to /dev/tty in a cloned repo would
    block a plain open() forever, and with it the prompt (safeio opens non-blocking)."""
    try:
        return read_regular(path, limit)
    except FileNotFoundError:
        raise ProjectFileError("refusing %s: it is a dangling link" % path) from None
    except Unreadable as exc:
        raise ProjectFileError("refusing %s: %s" % (path, exc)) from None


def _from_pyproject(path: str) -> "str | None":
    """[tool.cudaswitch] cuda = "12.4". The file is only parsed when it mentions cudaswitch, so the
    common pyproject.toml costs one read and no tomllib import."""
    try:
        data = _read_bytes(path, PYPROJECT_MAX_BYTES)
    except ProjectFileError:  # unreadable, a directory, a FIFO: like the hook, treat it as silent
        return None
    if b"cudaswitch" not in data:
        return None
    if len(data) > PYPROJECT_MAX_BYTES:  # a table past the cap would be judged on half a file
        raise ProjectFileError("refusing %s: larger than %d bytes" % (path, PYPROJECT_MAX_BYTES))
    try:
        document = parse_toml(data)
    except Unreadable as exc:
        raise ProjectFileError("refusing %s: %s" % (path, exc)) from None
    tool = document.get("tool")
    table = tool.get("cudaswitch") if isinstance(tool, dict) else None
    if not isinstance(table, dict):
        return None
    value = table.get("cuda")
    if value is not None and not isinstance(value, str):
        raise ProjectFileError("refusing %s: [tool.cudaswitch] cuda must be a string" % path)
    return value
