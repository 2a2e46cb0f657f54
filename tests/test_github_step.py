"""GitHub Actions: the step documented in README.md, run in real bash the way the runner runs a
`run:` block, then its $GITHUB_ENV / $GITHUB_PATH files applied with the runner's rules (below), so
the next step's environment is what a workflow would see; the next step runs real nvcc."""

import json
import os
import re
from pathlib import Path

import pytest

from tests import kits
from tests.shellrun import script

README = Path(__file__).resolve().parent.parent / "README.md"


def documented_step():
    """The `run: |` lines of the "Use CUDA 13.0" step in README's yaml block."""
    block = re.search(r"```yaml\n(.*?)```", README.read_text(), re.S).group(1)
    lines = block.split("- name: Use CUDA 13.0", 1)[1].split("run: |", 1)[1].splitlines()[1:]
    indent = len(lines[0]) - len(lines[0].lstrip())
    out = []
    for line in lines:
        if line.strip() and len(line) - len(line.lstrip()) < indent:
            break
        out.append(line[indent:])
    return [l for l in out if l.strip()]


def apply_env_file(text, env):
    """actions/runner's $GITHUB_ENV rules: NAME=VALUE (split at the first '='), or NAME<<DELIM then
    lines up to one equal to DELIM (joined by newlines); whichever of '=' and '<<' comes first."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    while lines:
        line = lines.pop(0)
        if not line:
            continue
        eq, heredoc = line.find("="), line.find("<<")
        if eq >= 0 and (heredoc < 0 or eq < heredoc):
            env[line[:eq]] = line[eq + 1:]
            continue
        assert heredoc > 0, "not a $GITHUB_ENV line: %r" % line
        name, delimiter = line[:heredoc], line[heredoc + 2:]
        assert delimiter in lines, "unterminated %s<<%s" % (name, delimiter)
        end = lines.index(delimiter)
        env[name], lines = "\n".join(lines[:end]), lines[end + 1:]


def next_step_env(env, env_file, path_file, prepend):
    """The runner's environment for the next step: $GITHUB_ENV applied, then every $GITHUB_PATH
    entry so far (newest first) before PATH."""
    new = dict(env)
    apply_env_file(env_file.read_text(), new)
    for entry in path_file.read_text().splitlines() if path_file.exists() else []:
        if entry:
            prepend[:] = [p for p in prepend if p != entry] + [entry]
    new["PATH"] = os.pathsep.join(list(reversed(prepend)) + [new["PATH"]])
    return new


@pytest.fixture(scope="module")
def ci_host(tmp_path_factory):
    from tests.conftest import Host

    base = tmp_path_factory.mktemp("gha")
    host = Host(base / "root", base / "work")
    for minor in ("13.0", "13.1"):
        kits.install_classic(kits.cuda13(minor), host.path("/usr/local/cuda-%s" % minor), minor)
    host.base = base
    return host


def run_step(host, lines, env, name):
    """One `run:` step: bash with fresh $GITHUB_ENV / $GITHUB_PATH files, as the runner gives each step."""
    files = host.base / name
    files.mkdir()
    env = dict(env, GITHUB_ENV=str(files / "env"), GITHUB_PATH=str(files / "path"))
    (files / "env").write_text("")
    (files / "path").write_text("")
    proc = script("bash", ["set -eo pipefail"] + lines, env, cwd=str(files))
    assert proc.returncode == 0, proc.stderr
    return files / "env", files / "path", proc


NEXT_STEP = ['nvcc --version | grep release', 'echo "CUDA_HOME=$CUDA_HOME"',
             "python3 -c 'import os, json; print(json.dumps(os.environ[\"PATH\"]))'"]


def test_documented_step_gives_the_next_step_the_chosen_nvcc(ci_host):
    env, prepend = dict(ci_host.env), []
    env_file, path_file, _ = run_step(ci_host, documented_step(), env, "plain")
    after = next_step_env(env, env_file, path_file, prepend)
    proc = script("bash", NEXT_STEP, after)
    assert "release 13.0" in proc.stdout, proc.stdout + proc.stderr
    assert "CUDA_HOME=%s" % ci_host.path("/usr/local/cuda-13.0") in proc.stdout


def test_multiline_values_use_the_heredoc_form_and_arrive_byte_exact(ci_host):
    """A PATH entry holding a newline (and one holding the default delimiter) forces NAME<<DELIM."""
    odd = ["/opt/new\nline/bin", "/opt/CUDASWITCH_EOF/bin"]
    env, prepend = dict(ci_host.env, PATH=os.pathsep.join(odd + [ci_host.env["PATH"]])), []
    env_file, path_file, _ = run_step(ci_host, documented_step(), env, "multiline")
    text = env_file.read_text()
    assert re.search(r"^PATH<<(ghadelimiter_[0-9a-f]{32})$", text, re.M), text  # random, as @actions/core
    expected = json.loads(ci_host.run("use", "13.0", "--shell", "json", env={"PATH": env["PATH"]},
                                      check=True).stdout)["set"]["PATH"]
    after = next_step_env(env, env_file, path_file, prepend)
    toolkit_bin = str(ci_host.path("/usr/local/cuda-13.0/bin"))
    assert after["PATH"] == toolkit_bin + os.pathsep + expected  # the $GITHUB_PATH line, then the switched PATH
    proc = script("bash", NEXT_STEP, after)
    assert "release 13.0" in proc.stdout
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == after["PATH"]


def test_an_earlier_github_path_toolkit_does_not_win(ci_host):
    """A setup action before ours put CUDA 13.1's bin in $GITHUB_PATH: the runner prepends it to PATH
    in every later step, ahead of $GITHUB_ENV's PATH. The documented $GITHUB_PATH line comes later,
    so it goes first; the $GITHUB_ENV line alone would leave 13.1 in front."""
    env, prepend = dict(ci_host.env), []
    env_file, path_file, _ = run_step(ci_host, ['echo %s >> "$GITHUB_PATH"' % ci_host.path("/usr/local/cuda-13.1/bin")],
                                      env, "earlier")
    env = next_step_env(env, env_file, path_file, prepend)
    step = documented_step()
    only_env = next_step_env(env, *run_step(ci_host, step[:1], env, "env-only")[:2], list(prepend))
    assert "release 13.1" in script("bash", NEXT_STEP, only_env).stdout
    after = next_step_env(env, *run_step(ci_host, step, env, "documented")[:2], prepend)
    assert "release 13.0" in script("bash", NEXT_STEP, after).stdout
