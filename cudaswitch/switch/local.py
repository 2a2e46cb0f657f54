"""`local`: write or remove .cudaversion in the current directory, validated and atomically (a cloned
repository may have planted names: a link there is replaced, a directory, FIFO or device refused)."""

import os
import stat

from cudaswitch.errors import CudaSwitchError
from cudaswitch.paths import Paths
from cudaswitch.safeio import replace_regular

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cudaswitch.toolkit import AnyRecord

FILE = ".cudaversion"


def set_local(request: str, unset: bool) -> str:
    """What `local REQUEST` / `local --unset` did, in one line."""
    path = os.path.join(os.getcwd(), FILE)
    if unset and not os.path.lexists(path):
        return "no %s here; nothing removed" % path
    _refuse_unless_file(path)
    if unset:
        try:
            os.unlink(path)
        except OSError as exc:
            raise CudaSwitchError("cannot remove %s: %s" % (path, exc.strerror or exc)) from None
        return "removed %s" % path
    from cudaswitch.switch import projectfile
    from cudaswitch.registry import discover
    from cudaswitch.registry.resolve import resolve

    parsed = projectfile.parse_request(path, request)
    record = resolve(discover.load(Paths(), dict(os.environ)), parsed)
    try:
        replace_regular(path, (request.strip() + "\n").encode("utf-8"))
    except OSError as exc:
        raise CudaSwitchError("cannot write %s: %s" % (path, exc.strerror or exc)) from None
    return "wrote %s: %s (now %s at %s%s)" % (path, request.strip(), record["version"], record["root"],
                                              _incomplete(record))


def _incomplete(record: "AnyRecord") -> str:
    """A pin to a toolkit that cannot compile is allowed (a runtime-only tree serves a loader path)
    but said in the same line: the project's builds will fail until it is complete."""
    if record.get("status") == "ok":
        return ""
    return "; it is %s: %s" % (record.get("status") or "incomplete", "; ".join(record.get("problems") or ()))


def _refuse_unless_file(path: str) -> None:
    """A .cudaversion that is a directory, FIFO or device is not ours to replace or remove."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise CudaSwitchError("cannot read %s: %s" % (path, exc.strerror or exc)) from None
    if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
        kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
        raise CudaSwitchError("%s is %s: not replaced" % (path, kind), "remove it or run `local` elsewhere")
