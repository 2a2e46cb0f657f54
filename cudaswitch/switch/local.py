"""`local`: write or remove .cudaversion in the current directory, validated and atomically.

The directory may be a cloned repository that planted names in advance: the new file goes to a
private temp file (O_EXCL, a random name) renamed over `.cudaversion`; a link there is replaced,
never written through; a directory, FIFO or device there is refused."""

import os
import stat

from cudaswitch.errors import CudaSwitchError
from cudaswitch.paths import Paths
from cudaswitch.safeio import replace_regular

FILE = ".cudaversion"


def set_local(request, unset):
    path = os.path.join(os.getcwd(), FILE)
    if unset:
        return _unset(path)
    from cudaswitch.switch import projectfile
    from cudaswitch.registry import discover as registry
    from cudaswitch.registry.resolve import resolve

    _refuse_unless_file(path)
    parsed = projectfile.parse_request(path, request)
    record = resolve(registry.load(Paths(), dict(os.environ)), parsed)
    try:
        replace_regular(path, (request.strip() + "\n").encode("utf-8"))
    except OSError as exc:
        raise CudaSwitchError("cannot write %s: %s" % (path, exc.strerror or exc)) from None
    return "wrote %s: %s (now %s at %s)" % (path, request.strip(), record["version"], record["root"])


def _unset(path):
    if not os.path.lexists(path):
        return "no %s here; nothing removed" % path
    _refuse_unless_file(path)
    try:
        os.unlink(path)
    except OSError as exc:
        raise CudaSwitchError("cannot remove %s: %s" % (path, exc.strerror or exc)) from None
    return "removed %s" % path


def _refuse_unless_file(path):
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
