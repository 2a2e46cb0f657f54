"""cudaswitch's own interpreter imports nothing of the repository it runs in. The attack: a user's
rc file has `export PYTHONPATH=$PYTHONPATH:/opt/x` with PYTHONPATH unset, which leaves an empty
entry, and Python reads an empty (or relative) entry as the working directory; the hook starts
cudaswitch inside every repository the shell enters, so that repository's sitecustomize.py (imported
by `site` before the script's first line), usercustomize.py or json.py ran on `cd`. Each file here
only appends its name to a canary outside the repository.

The script is tested as each installer leaves it: setuptools keeps the `#!python -E` line's
option, pip (and pipx) drop it; where it is dropped, `init` names a launcher that keeps -E."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.shellrun import INIT, SHELLS, Interactive

REPO = Path(__file__).resolve().parent.parent
MODULES = ("sitecustomize", "usercustomize", "json", "ctypes", "encodings", "marshal", "binascii", "typer")
PYTHONPATHS = (":/opt/x", "/opt/x:", "rel", "/opt/x::/opt/y")
SHOW = {"bash": 'printf "H=<%s>\\n" "$CUDA_HOME"', "zsh": 'printf "H=<%s>\\n" "$CUDA_HOME"',
        "fish": 'printf "H=<%s>\\n" "$CUDA_HOME"'}


def installed_script(directory, installer, python=sys.executable):
    """bin/cudaswitch as `installer` writes it: its `#!python -E` line rewritten to `python`, with
    the option (setuptools) or without it (pip)."""
    text = (REPO / "bin" / "cudaswitch").read_text()
    first, rest = text.split("\n", 1)
    assert first == "#!python -E", first
    shebang = "#!%s -E" % python if installer == "setuptools" else "#!%s" % python
    directory.mkdir(parents=True, exist_ok=True)
    script = directory / "cudaswitch"
    script.write_text(shebang + "\n" + rest)
    script.chmod(0o755)
    return script


def hostile_repo(base, canary, modules=MODULES):
    repo = base / "repo"
    (repo / "rel").mkdir(parents=True)
    (repo / ".cudaversion").write_text("13.0\n")
    for module in modules:
        code = "open(%r, 'a').write('%s\\n')\n" % (str(canary), module)
        for where in (repo, repo / "rel"):  # the working directory, and a relative PYTHONPATH entry
            (where / (module + ".py")).write_text(code)
    return repo


def env_for(host, base, bindir, pythonpath):
    env = dict(host.env, PYTHONPATH=pythonpath, CUDASWITCH_CACHE_DIR=str(base / "cache"),
               CUDASWITCH_DATA_DIR=str(base / "data"))
    env["PATH"] = str(bindir) + os.pathsep + env["PATH"]
    return env


def assert_no_canary(canary, *texts):
    assert not canary.exists(), "imported: " + canary.read_text()
    for text in texts:
        assert "Traceback" not in text, text


@pytest.mark.parametrize("installer", ["pip", "setuptools"])
@pytest.mark.parametrize("shell", SHELLS)
def test_hooked_shell_entering_the_repo_imports_nothing_of_it(standard_host, tmp_path, shell, installer):
    canary = tmp_path / "canary"
    repo = hostile_repo(tmp_path, canary)
    bindir = tmp_path / "bin"
    installed_script(bindir, installer)
    env = env_for(standard_host, tmp_path, bindir, ":/opt/x")
    sh = Interactive(shell, env, cwd=str(tmp_path))  # the rc file runs init outside any repository
    try:
        out = sh.run(INIT[shell])
        out += sh.run("cd %s" % repo)
        shown = sh.run(SHOW[shell])
        out += shown + sh.run("cudaswitch use latest") + sh.run("cudaswitch current")
        sh.send("cudaswitch use 13.\t")
        out += sh.run("\x15true")
    finally:
        sh.close()
    assert_no_canary(canary, out)
    assert "H=<%s>" % standard_host.path("/usr/local/cuda-13.0") in shown, out


@pytest.mark.parametrize("pythonpath", PYTHONPATHS)
def test_script_with_its_option_imports_nothing_of_the_repo(standard_host, tmp_path, pythonpath):
    canary = tmp_path / "canary"
    repo = hostile_repo(tmp_path, canary)
    script = installed_script(tmp_path / "bin", "setuptools")
    env = env_for(standard_host, tmp_path, tmp_path / "bin", pythonpath)
    for args in (("hook-env", "--shell", "bash"), ("use", "13.0", "--shell", "json"), ("list", "--json"),
                 ("current", "--json"), ("use", "--help")):
        proc = subprocess.run([str(script), *args], capture_output=True, text=True, env=env, cwd=repo, timeout=120)
        assert proc.returncode == 0, (args, proc.stderr)
        assert_no_canary(canary, proc.stderr)
    assert json.loads(proc_out(script, env, repo, "list", "--json"))


def proc_out(script, env, cwd, *args):
    proc = subprocess.run([str(script), *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize("pythonpath", PYTHONPATHS)
def test_script_without_its_option_imports_nothing_after_startup(standard_host, tmp_path, pythonpath):
    """As pip installs it, typed by hand inside the repository: what `site` imports at startup
    cannot be helped from inside the script (that is what init's launcher is for), but nothing
    cudaswitch imports itself comes from the repository: the script starts itself again with -E."""
    canary = tmp_path / "canary"
    repo = hostile_repo(tmp_path, canary, modules=("json", "ctypes", "typer", "tomllib"))
    script = installed_script(tmp_path / "bin", "pip")
    env = env_for(standard_host, tmp_path, tmp_path / "bin", pythonpath)
    out = proc_out(script, env, repo, "use", "13.0", "--shell", "json")
    assert json.loads(out)["set"]["CUDA_HOME"] == str(standard_host.path("/usr/local/cuda-13.0"))
    proc = subprocess.run([str(script), "global", "--help"], capture_output=True, text=True, env=env, cwd=repo,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert_no_canary(canary, proc.stderr)


@pytest.mark.parametrize("pythonpath", ("", ":/opt/x", "rel", "rel:/opt/x"))
def test_python_m_in_the_repo_imports_nothing_of_it_after_startup(standard_host, tmp_path, pythonpath):
    """`python -m cudaswitch` puts the working directory first on sys.path; __main__ takes it off,
    and PYTHONPATH's relative entries, before importing anything."""
    canary = tmp_path / "canary"
    repo = hostile_repo(tmp_path, canary, modules=("json", "ctypes", "typer", "tomllib"))
    env = env_for(standard_host, tmp_path, tmp_path / "bin", pythonpath)
    for args in (("use", "13.0", "--shell", "json"), ("list", "--json"), ("global", "--help")):
        proc = subprocess.run([sys.executable, "-m", "cudaswitch", *args], capture_output=True, text=True,
                              env=env, cwd=repo, timeout=120)
        assert proc.returncode == 0, (args, proc.stderr)
        assert_no_canary(canary, proc.stderr)


def test_init_names_a_launcher_with_the_option_where_the_installer_dropped_it(standard_host, tmp_path):
    script = installed_script(tmp_path / "bin", "pip")
    env = env_for(standard_host, tmp_path, tmp_path / "bin", "")
    text = proc_out(script, env, tmp_path, "init", "bash")
    program = Path(re.search(r"^__cudaswitch_bin='([^']+)'$", text, re.M).group(1))
    assert program.parent.parent.parent == tmp_path / "data" and program.name == "cudaswitch"
    assert program.read_text().split("\n", 1)[0] == "#!%s -E" % sys.executable
    stamp = program.stat().st_mtime_ns
    assert proc_out(script, env, tmp_path, "init", "zsh").count(str(program)) >= 1
    assert program.stat().st_mtime_ns == stamp  # written once, not at every shell start
    # with the option kept, init names the script itself
    kept = installed_script(tmp_path / "kept", "setuptools")
    assert "__cudaswitch_bin='%s'" % kept in proc_out(kept, env, tmp_path, "init", "bash")
    # the script uninstalled: the launcher says so in one line, as the hook does for a missing program
    script.unlink()
    gone = subprocess.run([str(program), "hook-env", "--shell", "bash"], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=60)
    assert gone.returncode == 127 and gone.stdout == "" and gone.stderr.count("\n") == 1
    assert "%s not found" % script in gone.stderr


def test_launcher_for_an_interpreter_path_too_long_for_a_shebang(standard_host, tmp_path):
    """Linux reads 127 bytes of a #! line on older kernels; a longer interpreter path gets a /bin/sh
    first line that starts it with -E (pip writes its own scripts that way)."""
    canary = tmp_path / "canary"
    repo = hostile_repo(tmp_path, canary)
    deep = tmp_path / ("d" * 100) / ("e" * 40)
    deep.mkdir(parents=True)
    python = deep / "python3"
    os.symlink(sys.executable, python)
    script = installed_script(tmp_path / "bin", "pip", python=str(python))
    env = env_for(standard_host, tmp_path, tmp_path / "bin", ":/opt/x")
    proc = subprocess.run([str(python), str(script), "init", "bash"], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=120)
    program = re.search(r"^__cudaswitch_bin='([^']+)'$", proc.stdout, re.M).group(1)
    assert Path(program).read_text().startswith("#!/bin/sh\n")
    out = proc_out(program, env, repo, "hook-env", "--shell", "bash")
    assert "CUDA_HOME='%s'" % standard_host.path("/usr/local/cuda-13.0") in out
    assert_no_canary(canary)


def test_installed_only_on_pythonpath_still_starts(standard_host, tmp_path):
    """A site that installs cudaswitch into a prefix and puts it on PYTHONPATH: under -E the script
    adds PYTHONPATH's absolute entries back, and only those."""
    if not os.access("/usr/bin/python3", os.X_OK) or sys.version_info[:2] != (3, 11):
        pytest.skip("needs a second Python 3.11 without cudaswitch installed")
    probe = subprocess.run(["/usr/bin/python3", "-c", "import sys; print(sys.version_info[:2] >= (3, 11))"],
                           capture_output=True, text=True, timeout=60)
    if probe.stdout.strip() != "True":
        pytest.skip("/usr/bin/python3 is older than 3.11 (no tomllib)")
    canary = tmp_path / "canary"
    repo = hostile_repo(tmp_path, canary)
    prefix = tmp_path / "prefix"
    shutil.copytree(REPO / "cudaswitch", prefix / "cudaswitch", ignore=shutil.ignore_patterns("__pycache__"))
    script = installed_script(tmp_path / "bin", "setuptools", python="/usr/bin/python3")
    env = env_for(standard_host, tmp_path, tmp_path / "bin", "%s::rel" % prefix)
    out = proc_out(script, env, repo, "use", "13.0", "--shell", "json")
    assert json.loads(out)["set"]["CUDA_HOME"] == str(standard_host.path("/usr/local/cuda-13.0"))
    assert_no_canary(canary)
