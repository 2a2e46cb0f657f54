"""direnv: `use cuda 13.0` in an .envrc, through the real direnv (Debian package) in real bash,
driven the way direnv's own bash hook does it (`eval "$(direnv export bash)"` at each prompt).
The user's rc file put CUDA 13.1 on PATH: inside the project only 13.0 is there, outside 13.1 is back.

An .envrc is a script the user chose to `direnv allow`; what cudaswitch guarantees is that the
argument of `use cuda` is data with the rules of a .cudaversion, plus a path to a toolkit root
(trusted code may name one; a .cudaversion never may): a hostile one is refused."""

import os
import subprocess

import pytest

from tests import kits
from tests.shellrun import script


@pytest.fixture(scope="module")
def direnv_host(tmp_path_factory):
    from tests.conftest import Host

    base = tmp_path_factory.mktemp("direnv")
    host = Host(base / "root", base / "work")
    for minor in ("13.0", "13.1"):
        kits.install_classic(kits.cuda13(minor), host.path("/usr/local/cuda-%s" % minor), minor)
    host.env["PATH"] = "%s:%s" % (host.path("/usr/local/cuda-13.1/bin"), host.env["PATH"])
    xdg = base / "xdg"
    host.env.update({"XDG_CONFIG_HOME": str(xdg / "config"), "XDG_DATA_HOME": str(xdg / "data"),
                     "XDG_CACHE_HOME": str(xdg / "cache"), "DIRENV_LOG_FORMAT": "direnv: %s"})
    rc = xdg / "config" / "direnv" / "direnvrc"
    rc.parent.mkdir(parents=True)
    rc.write_text(host.run("init", "direnv", check=True).stdout)
    host.base = base
    return host


def project(host, name, envrc):
    directory = host.base / name
    directory.mkdir()
    (directory / ".envrc").write_text(envrc)
    direnv = kits.require("direnv")
    subprocess.run([direnv, "allow", str(directory)], env=host.env, check=True, timeout=60,
                   capture_output=True, cwd=str(host.base))
    return directory


ENTER_AND_LEAVE = [
    'cd "$1"', 'eval "$(direnv export bash)"',
    'echo "inside: $(nvcc --version | grep release) CUDA_HOME=${CUDA_HOME-unset}"', 'echo "inside PATH: $PATH"',
    'cd ..', 'eval "$(direnv export bash)"',
    'echo "outside: $(nvcc --version | grep release) CUDA_HOME=${CUDA_HOME-unset}"', 'echo "outside PATH: $PATH"',
]


def run_in_bash(host, directory):
    kits.require("direnv")
    lines = ["set -- %s" % _quote(str(directory))] + ENTER_AND_LEAVE
    return script("bash", lines, host.env, cwd=str(host.base))


def _quote(text):
    return "'" + text.replace("'", "'\\''") + "'"


def _line(proc, prefix):
    [line] = [l for l in proc.stdout.splitlines() if l.startswith(prefix)]
    return line


def test_use_cuda_switches_inside_and_direnv_restores_outside(direnv_host):
    directory = project(direnv_host, "proj", "use cuda 13.0\n")
    proc = run_in_bash(direnv_host, directory)
    assert proc.returncode == 0, proc.stderr
    root130 = str(direnv_host.path("/usr/local/cuda-13.0"))
    assert "release 13.0" in _line(proc, "inside:") and ("CUDA_HOME=" + root130) in _line(proc, "inside:")
    assert _line(proc, "inside PATH:").startswith("inside PATH: %s/bin:" % root130)
    assert "release 13.1" in _line(proc, "outside:") and "CUDA_HOME=unset" in _line(proc, "outside:")
    assert _line(proc, "outside PATH:") == "outside PATH: " + direnv_host.env["PATH"]
    assert "cudaswitch: " in proc.stderr  # the same verdict line as `use`, through direnv's stderr


@pytest.mark.parametrize("argument", ["'$(touch pwned)'", "'13.0; touch pwned'", "'13.0 13.1'", "'13.0\ttouch'",
                                      "'conda:/usr/local/cuda-13.0'"])
def test_hostile_argument_is_refused_like_a_hostile_cudaversion(direnv_host, argument, tmp_path):
    name = "hostile%d" % abs(hash(argument))
    directory = project(direnv_host, name, "use cuda %s\n" % argument)
    proc = run_in_bash(direnv_host, directory)
    assert "release 13.1" in _line(proc, "inside:") and "CUDA_HOME=unset" in _line(proc, "inside:")
    assert not (directory / "pwned").exists() and not (direnv_host.base / "pwned").exists()
    assert "refusing .envrc" in proc.stderr or "takes one version request" in proc.stderr, proc.stderr
    # the same request in a .cudaversion is refused by the same rule
    cudaversion = tmp_path / "p"
    cudaversion.mkdir()
    value = argument.strip("'")
    if " " not in value:
        (cudaversion / ".cudaversion").write_text(value + "\n")
        same = direnv_host.run("hook-env", "--shell", "bash", cwd=str(cudaversion))
        assert same.returncode != 0 and same.stdout == "" and "is not a toolkit version request" in same.stderr


@pytest.mark.parametrize("form", ["absolute", "relative"])
def test_use_cuda_takes_a_toolkit_root_but_a_cudaversion_never_does(direnv_host, form, tmp_path):
    """An HPC user's .envrc says `use cuda /opt/cuda-12.4` (a root no registry source knows by
    version): it was refused as "not a toolkit version request", though `direnv allow` made the
    .envrc trusted code. Through real direnv in real bash it switches now, and direnv restores the
    shell outside; the same path in a .cudaversion, data any repository may ship, is still refused."""
    root = direnv_host.path("/usr/local/cuda-13.0")
    directory = direnv_host.base / ("rooted-" + form)
    argument = str(root) if form == "absolute" else os.path.relpath(root, directory)
    directory = project(direnv_host, directory.name, "use cuda %s\n" % _quote(argument))
    proc = run_in_bash(direnv_host, directory)
    assert proc.returncode == 0, proc.stderr
    assert "release 13.0" in _line(proc, "inside:") and ("CUDA_HOME=%s" % root) in _line(proc, "inside:")
    assert "release 13.1" in _line(proc, "outside:") and "CUDA_HOME=unset" in _line(proc, "outside:")
    cudaversion = tmp_path / "p"
    cudaversion.mkdir()
    (cudaversion / ".cudaversion").write_text(str(root) + "\n")
    same = direnv_host.run("hook-env", "--shell", "bash", cwd=str(cudaversion))
    assert same.returncode != 0 and same.stdout == "" and "is not a toolkit version request" in same.stderr


def test_use_cuda_with_a_path_that_is_no_toolkit_switches_nothing(direnv_host, tmp_path):
    proc = direnv_host.run("direnv-use", "--", str(tmp_path), cwd=str(tmp_path))
    assert proc.returncode != 0 and proc.stdout == "" and len(proc.stderr.strip().splitlines()) == 1
    assert "Traceback" not in proc.stderr


def test_direnv_use_prints_nothing_on_a_bad_request(direnv_host):
    proc = direnv_host.run("direnv-use", "--", "13.0;touch pwned")
    assert proc.returncode != 0 and proc.stdout == "" and len(proc.stderr.strip().splitlines()) == 1
    assert "refusing .envrc" in proc.stderr


def test_init_direnv_names_this_program(direnv_host):
    text = direnv_host.run("init", "direnv", check=True).stdout
    assert "use_cuda()" in text and os.path.realpath(text.split("$(")[1].split()[0].strip("'")).endswith("cudaswitch")


@pytest.mark.parametrize("order", ["direnv first", "cudaswitch first"])
def test_with_the_cudaswitch_hook_also_loaded_neither_undoes_the_other(direnv_host, order):
    """A user with both `eval "$(direnv hook bash)"` and `eval "$(cudaswitch init bash)"` in .bashrc:
    at each prompt both hooks run (in the order the rc file set them up)."""
    directory = direnv_host.base / "proj"
    if not directory.exists():
        directory = project(direnv_host, "proj", "use cuda 13.0\n")
    hooks = ['eval "$(direnv export bash)"', "__cudaswitch_hook"]
    prompt = "; ".join(hooks if order == "direnv first" else hooks[::-1])
    lines = ['eval "$(cudaswitch init bash)"', prompt, 'cd %s' % _quote(str(directory)), prompt, prompt,
             'echo "inside: $(nvcc --version | grep release)"', "cd ..", prompt, prompt,
             'echo "outside: $(nvcc --version | grep release) CUDA_HOME=${CUDA_HOME-unset}"']
    kits.require("direnv")
    proc = script("bash", lines, direnv_host.env, cwd=str(direnv_host.base))
    assert "release 13.0" in _line(proc, "inside:"), proc.stderr
    assert "release 13.1" in _line(proc, "outside:") and "CUDA_HOME=unset" in _line(proc, "outside:")


EXPORT = {"zsh": 'eval "$(direnv export zsh)"', "fish": "direnv export fish | source"}


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_other_shells_get_the_switch_through_direnv_export(direnv_host, shell):
    """direnv runs the .envrc in bash whatever the user's shell; zsh and fish get its diff."""
    directory = direnv_host.base / ("proj-" + shell)
    if not directory.exists():
        project(direnv_host, directory.name, "use cuda 13.0\n")
    kits.require("direnv")
    show = {"zsh": 'echo "%s: $(nvcc --version | grep release)"', "fish": 'echo "%s: "(nvcc --version | grep release)'}
    lines = ["cd %s" % _quote(str(directory)), EXPORT[shell], show[shell] % "inside", "cd ..", EXPORT[shell],
             show[shell] % "outside"]
    proc = script(shell, lines, direnv_host.env, cwd=str(direnv_host.base))
    assert "release 13.0" in _line(proc, "inside:"), proc.stderr
    assert "release 13.1" in _line(proc, "outside:")
