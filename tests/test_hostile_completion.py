"""A completion candidate is data, never code. The attack: a toolkit whose version.json (an image
under CUDASWITCH_ROOT, or a registry cache record) holds `12.4\\$(touch ...)`; typer's zsh
completion printed it as code for `eval`, where `\\$(` ran the command on TAB after
`cudaswitch use `. Two layers are checked with real shells on a pty: the program offers only
plain version text, and the shells' completion functions treat whatever the program prints as
words (a stand-in program prints each hostile value raw, as if the first layer were gone), then
the completed line is run: nothing may execute, on TAB or on Enter."""

import json
import os
import random

import pytest

from cudaswitch.safeio import seal
from tests import kits
from tests.shellrun import INIT, SHELLS, Interactive

BEFORE = {"bash": "true", "zsh": "autoload -Uz compinit && compinit -u", "fish": "true"}
# What each shell would run of a completion value: substitutions, separators, quotes, escapes.
PAYLOADS = ("\\$(touch {c})", "$(touch {c})", "`touch {c}`", "\\`touch {c}\\`", '"; touch {c}; "',
            "'; touch {c}; '", ";touch {c}", "|touch {c}", "&& touch {c}", "\ntouch {c}", "${{(e):-$(touch {c})}}",
            "$((0))$(touch {c})", ":$(touch {c})", "\\:$(touch {c})", "(touch {c})", "$(touch {c}) #",
            "{{a,b}}$(touch {c})", "$'\\x41'$(touch {c})", "\t$(touch {c})", "\x1b]0;t\x07$(touch {c})",
            "\\\\$(touch {c})", "\"$(touch {c})\"", "'$(touch {c})'", ")$(touch {c})(", " $(touch {c})")
PREFIXES = ("12.4", "", "13.", "12.4:", "conda:12.4", "1", "-", "~", "*")
SUFFIXES = ("", "\\", "'", '"', ")", "`", " ", "\\n")
CASES = 300


def hostile_values(canary_dir, count=CASES, seed=22):
    """`count` distinct version strings, each of which would touch its own file in canary_dir if
    any shell ran it."""
    rng = random.Random(seed)
    values = []
    for index in range(count):
        payload = PAYLOADS[index % len(PAYLOADS)].format(c=os.path.join(canary_dir, "case-%d" % index))
        values.append(rng.choice(PREFIXES) + payload + rng.choice(SUFFIXES))
    assert len(set(values)) == count
    return values


def write_cache(host, versions):
    """A sealed registry cache, as discovery writes it, whose records carry these versions."""
    records = [{"version": v, "sources": ["system", "conda", "x$(touch y)"], "root": "/opt/t%d" % i}
               for i, v in enumerate(versions)]
    from cudaswitch import __version__

    path = host.work / "cache" / "registry.marshal"
    path.parent.mkdir(parents=True, exist_ok=True)
    import marshal

    path.write_bytes(seal(marshal.dumps((__version__, {"records": records}))))


def complete_with(host, protocol, line):
    """What the real program answers a TAB at the end of `line`, in one shell's protocol."""
    env = {"_CUDASWITCH_COMPLETE": "complete_" + protocol}
    if protocol == "bash":
        env.update(COMP_WORDS=line, COMP_CWORD=str(len(line.split()) - (0 if line.endswith(" ") else 1)))
    else:
        env.update(_TYPER_COMPLETE_ARGS=line, _TYPER_COMPLETE_FISH_ACTION="get-args")
    return host.run(env=env, timeout=60)


@pytest.mark.parametrize("protocol", ["bash", "zsh", "fish"])
def test_the_program_offers_only_plain_versions(host, tmp_path, protocol):
    """300 hostile versions and two plain ones in the cache: only the plain ones are offered."""
    canary = tmp_path / "canary"
    canary.mkdir()
    write_cache(host, hostile_values(str(canary)) + ["12.4.131", "13.0.88"])
    proc = complete_with(host, protocol, "cudaswitch use ")
    assert proc.returncode == 0, proc.stderr
    if protocol == "bash":
        assert proc.stdout.split("\n")[:-1] == ["12.4", "12.4.131", "system:12.4", "conda:12.4",
                                                "13.0", "13.0.88", "system:13.0", "conda:13.0"]
    for text in ("touch", "$", "`", "case-", "x$"):
        assert text not in proc.stdout
    assert list(canary.iterdir()) == []


def test_an_image_whose_version_json_holds_a_command_runs_nothing_on_tab_in_zsh(host, tmp_path):
    """The reported case end to end: version.json under CUDASWITCH_ROOT, `cudaswitch list` caches it,
    then TAB after `cudaswitch use ` in real zsh with the hook loaded."""
    canary = tmp_path / "canary"
    root = host.path("/usr/local/cuda-12.4")
    kits.install_classic_runtime12(root)
    (root / "version.json").write_text(json.dumps({"cuda": {"name": "CUDA SDK",
                                                            "version": "12.4\\$(touch %s)" % canary}}))
    kits.install_classic(kits.cuda13("13.0"), host.path("/usr/local/cuda-13.0"), "13.0")
    host.run("list", check=True)
    for shell in SHELLS:
        sh = Interactive(shell, host.env, cwd=str(host.work))
        try:
            sh.run(BEFORE[shell])
            sh.run(INIT[shell])
            sh.send("cudaswitch use \t")
            sh.run("\x15true", timeout=60)  # Ctrl-U: drop the completed line, then a harmless command
            sh.send("cudaswitch use 1\t")
            out = sh.run("", timeout=60)
        finally:
            sh.close()
        assert not canary.exists(), shell
        assert "Traceback" not in out


STAND_IN = """#!/bin/sh
if [ -n "$_CUDASWITCH_COMPLETE" ]; then
    [ "$_TYPER_COMPLETE_FISH_ACTION" = is-args ] && exit 0
    cat '{value}'
    echo
    exit 0
fi
printf '%s\\0' "$@" >> '{log}'
exit 1
"""


@pytest.fixture
def stand_in(tmp_path):
    """A program in place of cudaswitch that answers every completion with the value in a file, raw,
    and logs the arguments it is run with otherwise."""
    value, log, program = tmp_path / "value", tmp_path / "argv.log", tmp_path / "bin" / "cudaswitch"
    program.parent.mkdir()
    program.write_text(STAND_IN.format(value=value, log=log))
    program.chmod(0o755)
    return program, value, log


BIN = {"bash": "__cudaswitch_bin=%s", "zsh": "__cudaswitch_bin=%s", "fish": "set -g __cudaswitch_bin %s"}


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("shell", SHELLS)
def test_shells_complete_hostile_words_as_words(host, tmp_path, stand_in, shell):
    """300 hostile values printed raw by the program: TAB after `cudaswitch use `, then Enter, in
    each real shell: no value runs, and what reaches the program is the value itself."""
    program, value_file, log = stand_in
    canary = tmp_path / "canary"
    canary.mkdir()
    values = hostile_values(str(canary))
    host.work.mkdir(parents=True, exist_ok=True)
    sh = Interactive(shell, host.env, cwd=str(host.work))
    exact = 0
    try:
        sh.run(BEFORE[shell])
        sh.run(INIT[shell])
        sh.run(BIN[shell] % program)
        for index, value in enumerate(values):
            value_file.write_bytes(value.encode())
            log.write_bytes(b"")
            sh.send("cudaswitch use \t")
            sh.run("", timeout=20)
            sh.send("\x03")  # a line left open by a value (a newline made two candidates) is dropped
            sh.run("true", timeout=20)
            args = log.read_bytes().split(b"\0")
            exact += len(args) > 1 and args[1] == value.encode()
            assert list(canary.iterdir()) == [], (index, value)
    finally:
        sh.close()
    assert list(canary.iterdir()) == []
    # Values without a newline or tab are one candidate each, inserted quoted and read back whole.
    whole = [v for v in values if "\n" not in v and "\t" not in v]
    assert exact >= len(whole), (exact, len(whole))
