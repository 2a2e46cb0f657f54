"""Helpers shared by the registry tests: real toolkits with a nvcc that logs each run."""

import os

from tests import kits


def nvcc_version(minor):
    """The x.y.z nvcc of the wheels a kit was built from (what `nvcc --version` says: V13.0.88)."""
    return kits.dist_versions(kits.cuda13(minor).parent.parent)["nvidia-cuda-nvcc"]


LOGGING_NVCC = """#!/bin/sh
# Like this machine's /usr/local/bin/nvcc wrapper, plus a line per run in a log.
echo "$$ $*" >> {log}
exec "$(dirname "$0")/nvcc.real" "$@"
"""


def logging_toolkit(host, hostpath, minor="13.0", version_json=False):
    """A real toolkit whose bin/nvcc logs each run, then execs the real nvcc beside it."""
    root = kits.install_classic(kits.cuda13(minor), host.path(hostpath), minor, version_json=version_json)
    log = host.work / ("nvcc-runs-%s.log" % minor)
    log.parent.mkdir(parents=True, exist_ok=True)
    log.touch()
    os.rename(root / "bin/nvcc", root / "bin/nvcc.real")
    (root / "bin/nvcc").write_text(LOGGING_NVCC.format(log=log))
    (root / "bin/nvcc").chmod(0o755)
    return root, log


def runs(log):
    return len(log.read_text().splitlines())
