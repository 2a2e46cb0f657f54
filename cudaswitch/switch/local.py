"""`local`: write or remove .cudaversion in the current directory, validated and atomically."""

import os

from cudaswitch.paths import Paths, atomic_write

FILE = ".cudaversion"


def set_local(request, unset):
    from cudaswitch.switch import projectfile
    from cudaswitch.registry import discover as registry
    from cudaswitch.registry.resolve import resolve

    path = os.path.join(os.getcwd(), FILE)
    if unset:
        if not os.path.isfile(path):
            return "no %s here; nothing removed" % path
        os.unlink(path)
        return "removed %s" % path
    parsed = projectfile.parse_request(path, request)
    record = resolve(registry.load(Paths(), dict(os.environ)), parsed)
    atomic_write(path, (request.strip() + "\n").encode("utf-8"))
    return "wrote %s: %s (now %s at %s)" % (path, request.strip(), record["version"], record["root"])
