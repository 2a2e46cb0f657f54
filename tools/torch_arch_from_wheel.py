#!/usr/bin/env python3
"""Read torch wheels and print their cudaswitch/data/torch_builds.toml rows (evidence = "wheel").

    python3 tools/torch_arch_from_wheel.py torch-2.15.0-cp311-cp311-manylinux_2_28_x86_64.whl ...

Each wheel is streamed (never unpacked): the fatbinaries of torch/lib/libtorch_cuda.so give the
SASS and PTX every kernel file has (`arch`) and those only some have (`partial`); torch/version.py
gives the release and CUDA version; the file's sha256 pins what was read. Paste the rows into the
table (replacing any row for the same torch, CUDA and platform); the loader checks them.
"""

import hashlib
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from cudaswitch.errors import CudaSwitchError  # noqa: E402
from cudaswitch.verify import fatbin  # noqa: E402

PLATFORM_TAGS = (("manylinux", "x86_64", "linux-x86_64"), ("manylinux", "aarch64", "linux-aarch64"),
                 ("win", "amd64", "windows"))


def platform_of(name: str) -> str:
    tag = name.rsplit("-", 1)[-1].lower()
    for prefix, machine, platform in PLATFORM_TAGS:
        if tag.startswith(prefix) and machine in tag:
            return platform
    raise CudaSwitchError("%s: no known platform tag" % name)


def sha256_of(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


def row_text(found: dict, name: str, sha256: str) -> str:
    """One [[build]] row as TOML text."""
    release = (found.get("torch") or "").split("+")[0]
    if not re.match(r"^\d+\.\d+\.\d+$", release) or not found.get("cuda"):
        raise CudaSwitchError("%s: torch/version.py gives no release and CUDA version" % name)
    names = lambda items: "[%s]" % ", ".join('"%s"' % a for a in items)  # noqa: E731
    return "\n".join([
        "[[build]]", 'torch = "%s"' % ".".join(release.split(".")[:2]), 'release = "%s"' % release,
        'cuda = "%s"' % found["cuda"], 'platform = "%s"' % platform_of(name[:-len(".whl")]),
        "arch = %s" % names(fatbin.arch_flags(found)), "partial = %s" % names(found["partial"]),
        'evidence = "wheel"', 'source = "PyPI-wheel"', 'wheel = "%s"' % name, 'sha256 = "%s"' % sha256, ""])


def main(paths) -> int:
    if not paths:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    for path in paths:
        try:
            found = fatbin.read_wheel(path)
            print(row_text(found, os.path.basename(path), sha256_of(path)))
        except (CudaSwitchError, OSError) as exc:
            print("torch_arch_from_wheel: %s" % (getattr(exc, "message", None) or exc), file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
