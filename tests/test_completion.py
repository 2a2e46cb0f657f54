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


def _program_offers(host, line, protocol="bash"):
    """The words the real program answers a TAB at the end of `line`, in one shell's protocol."""
    env = {"_CUDASWITCH_COMPLETE": "complete_" + protocol}
    if protocol == "bash":
        env.update(COMP_WORDS=line, COMP_CWORD=str(len(line.split()) - (0 if line.endswith(" ") else 1)))
    else:
        env.update(_TYPER_COMPLETE_ARGS=line, _TYPER_COMPLETE_FISH_ACTION="get-args")
    proc = host.run(env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return [word.split("\t")[0] for word in proc.stdout.split("\n") if word]


@pytest.mark.parametrize("protocol", ["bash", "fish"])
def test_the_program_offers_shells_formats_and_no_internal_commands(host, protocol):
    """A new user's TABs: after `init ` the shells, after `--shell ` the formats, after `cudaswitch `
    the commands without the hook's internal ones (typer offered none of the first two, so every
    shell fell back to file names, and it offered hook-env)."""
    assert _program_offers(host, "cudaswitch init ", protocol) == ["bash", "zsh", "fish", "direnv"]
    formats = ["bash", "zsh", "fish", "posix", "json", "dotenv", "github"]
    assert _program_offers(host, "cudaswitch use 12.4 --shell ", protocol) == formats
    assert _program_offers(host, "cudaswitch off --shell ", protocol) == formats
    commands = _program_offers(host, "cudaswitch ", protocol)
    assert "use" in commands and "init" in commands
    assert "hook-env" not in commands and "direnv-use" not in commands


# What each shell's TAB should complete the line to, and what running it proves; a file in the
# working directory that file-name completion would pick instead.
TYPED = (("cudaswitch init fi", "fiddle.txt", "__cudaswitch"),
         ("cudaswitch use 13.1 --shell js", "jsnotes.txt", '"set"'))


@pytest.mark.parametrize("shell", SHELLS)
def test_tab_completes_init_shells_and_shell_formats(logged_host, shell):
    """In real bash, zsh and fish with the hook loaded: `init fi<TAB>` becomes `init fish`,
    `--shell js<TAB>` becomes `--shell json`, not the file beside them; `hoo<TAB>` is not hook-env."""
    host, log = logged_host
    for _, decoy, _ in TYPED:
        (host.work / decoy).write_text("")
    sh = Interactive(shell, host.env, cwd=str(host.work))
    try:
        sh.run(BEFORE[shell])
        sh.run(INIT[shell])
        for typed, decoy, proof in TYPED:
            out = _complete(sh, typed)
            assert proof in out and decoy not in out, (typed, out)
        out = _complete(sh, "cudaswitch hoo")
        assert "hook-env" not in out, out
    finally:
        sh.close()


def test_help_offers_no_second_completion(host):
    """`cudaswitch --help` listed typer's --install-completion, which writes a completion that knows
    no REQUESTs beside the hook's own; it is gone, from the page and as an option."""
    page = host.run("--help", check=True).stdout
    assert "--install-completion" not in page and "--show-completion" not in page
    assert "hook-env" not in page
    proc = host.run("--install-completion")
    assert proc.returncode != 0 and proc.stdout == ""
