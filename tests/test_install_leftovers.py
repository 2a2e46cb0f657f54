"""What `install --from pypi` leaves behind: no `.lock-<version>` once an install or uninstall has
ended, and nothing of pip's in the user's TMPDIR when the install is interrupted while pip works
(pip killed midway keeps its pip-unpack-*, pip-download-* and pip-build-tracker-* dirs)."""

import os
import signal
import subprocess
import time

from tests import release_wheels
from tests.conftest import CUDASWITCH
from tests.install_support import drop_installed_trees, toolkits_dir  # noqa: F401 (autouse fixture)


def test_no_lock_file_is_left_after_install_and_uninstall(host, tmp_path):
    env = release_wheels.index_of(tmp_path / "links", "13.1.0.0", "13.2.0.0")
    for release in ("13.1", "13.2"):
        proc = host.run("install", release, "--from", "pypi", "-c", "cudart", env=env, timeout=300)
        assert proc.returncode == 0, proc.stderr
    assert sorted(os.listdir(toolkits_dir(host))) == ["13.1.0", "13.2.0"]
    assert host.run("uninstall", "13.1.0").returncode == 0
    assert sorted(os.listdir(toolkits_dir(host))) == ["13.2.0"]


def test_ctrl_c_while_pip_works_leaves_nothing_in_tmpdir(host, tmp_path):
    """The pip cudaswitch runs (CUDASWITCH_PIP) makes its temp dirs as pip does, then hangs."""
    scratch, started = tmp_path / "tmp", tmp_path / "started"
    scratch.mkdir()
    pip = tmp_path / "pip"
    pip.write_text('#!/bin/sh\nmkdir "$TMPDIR/pip-unpack-x1" "$TMPDIR/pip-build-tracker-x2"\n'
                   'echo "Collecting cuda-toolkit"\ntouch %s\nexec sleep 300\n' % started)
    pip.chmod(0o755)
    env = dict(host.env, CUDASWITCH_PIP=str(pip), TMPDIR=str(scratch))
    proc = subprocess.Popen([CUDASWITCH, "install", "13.0", "--from", "pypi"], env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert started.exists(), "pip was never started"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and out == "", err
    assert os.listdir(scratch) == []
