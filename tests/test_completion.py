"""Tab completion in real interactive bash, zsh and fish on a pty, as a user gets it from the hook
line in their rc file: REQUESTs complete from the cached registry, and a TAB never starts discovery
(a logging nvcc wrapper, which every discovery runs, stays untouched over 100 TABs)."""

import os

import pytest

from tests import kits
from tests.shellrun import INIT, SHELLS, Interactive

# zsh without an rc file has no completion system; a user's zshrc loads it before the hook.
BEFORE = {"bash": "true", "zsh": "autoload -Uz compinit && compinit -u", "fish": "true"}


@pytest.fixture
def logged_host(host, tmp_path):
    """A 13.1 toolkit whose bin/nvcc is a wrapper script (as some site installs ship) that logs
    each run, on an otherwise empty host."""
    root = host.path("/usr/local/cuda-13.1")
    kits.install_classic(kits.cuda13("13.1"), root, "13.1", version_json=False)
    real = root / "bin" / "nvcc.real"
    os.replace(root / "bin" / "nvcc", real)
    log = tmp_path / "nvcc.log"
    (root / "bin" / "nvcc").write_text('#!/bin/sh\necho "$$" >> %s\nexec %s "$@"\n' % (log, real))
    (root / "bin" / "nvcc").chmod(0o755)
    host.run("list", check=True)  # the user ran cudaswitch once: the registry is cached
    assert log.read_text(), "discovery did not run the wrapper: the test would prove nothing"
    return host, log


def _complete(sh, typed):
    """Type `typed`, press TAB, then run the line; what it printed."""
    sh.send(typed + "\t")
    return sh.run("", timeout=60)


@pytest.mark.parametrize("shell", SHELLS)
def test_tab_completes_a_cached_version(logged_host, shell):
    host, log = logged_host
    sh = Interactive(shell, host.env, cwd=str(host.work))
    try:
        sh.run(BEFORE[shell])
        sh.run(INIT[shell])
        out = _complete(sh, "cudaswitch which 13.1.")
        assert str(host.path("/usr/local/cuda-13.1")) in out, out
    finally:
        sh.close()


@pytest.mark.timeout(1200)
def test_a_hundred_tabs_start_no_discovery(logged_host):
    host, log = logged_host
    before = log.read_text()
    sh = Interactive("bash", host.env, cwd=str(host.work))
    try:
        sh.run(INIT["bash"])
        for _ in range(100):  # one TAB at a time, each answered before the next, then clear the line
            sh.send("cudaswitch use 1\t")
            sh.read_until(b"3.1", timeout=60)  # bash redraws with \r: the completed tail is what shows
            sh.send("\x15")
        out = _complete(sh, "cudaswitch which 13.1.")
        assert str(host.path("/usr/local/cuda-13.1")) in out, out
    finally:
        sh.close()
    assert log.read_text() == before
