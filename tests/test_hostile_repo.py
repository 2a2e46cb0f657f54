"""Nothing beside a valid project file runs. Each case is a repository a stranger could publish:
a `.cudaversion` that is fine, next to `json.py` / `ctypes.py` / `os.py` (what a Python probe
started in the project would import) and `bin/nvcc`, `nvidia-smi`, `gcc`, `python3` (what a
relative or empty PATH entry, `PATH=$PATH:bin` or `PATH=.:$PATH` from an old rc file, finds).
Each file only appends its name to a canary file outside the repo: the canary must stay absent, and
no path inside the repo may reach the environment, on a cold cache and again on a warm one."""

import json
import shutil

import pytest

from tests.shellrun import INIT, SHELLS, Interactive

PY_MODULES = ("json", "ctypes", "os", "sitecustomize", "usercustomize", "encodings")
TOOLS = ("bin/nvcc", "nvcc", "nvidia-smi", "gcc", "g++", "python3", "python", "ldconfig", "bin/python3",
         "bin/gcc", "bin/nvidia-smi", "update-alternatives", "cudaswitch")
FAKE_NVCC = 'echo "Cuda compilation tools, release 99.9, V99.9.1"\n'
# PATH shapes seen in real rc files; each puts a repo-relative entry before or after the real dirs
PATH_SHAPES = {
    "appended-bin": "{path}:bin",
    "appended-empty": "{path}:",
    "leading-dot": ".:bin:{path}",
    "leading-empty": ":{path}",
}


def make_repo(base, canary):
    repo = base / "repo"
    (repo / "bin").mkdir(parents=True)
    (repo / ".cudaversion").write_text("13.0\n")
    for module in PY_MODULES:
        (repo / (module + ".py")).write_text("open(%r, 'a').write('%s.py\\n')\n" % (str(canary), module))
    for tool in TOOLS:
        path = repo / tool
        path.write_text("#!/bin/sh\necho %s >> '%s'\n%s" % (tool, canary, FAKE_NVCC if "nvcc" in tool else ""))
        path.chmod(0o755)
    return repo


def hostile_env(host, base, shape):
    env = dict(host.env)
    env["PATH"] = PATH_SHAPES[shape].format(path=env["PATH"])
    env["CUDASWITCH_CACHE_DIR"] = str(base / "cache")  # cold: a cache of this test only
    env.pop("VIRTUAL_ENV", None)  # its python would be asked first; the repo's must not be
    return env


def assert_nothing_of(repo, canary, text):
    assert not canary.exists(), "ran: " + canary.read_text()
    assert str(repo) not in text.replace(str(repo / ".cudaversion"), "")  # naming the file is fine


@pytest.mark.parametrize("shape", sorted(PATH_SHAPES))
def test_commands_in_a_hostile_repo_run_nothing_of_it(standard_host, tmp_path, shape):
    canary = tmp_path / "canary"
    repo = make_repo(tmp_path, canary)
    env = hostile_env(standard_host, tmp_path, shape)
    for temperature in ("cold", "warm"):
        out = standard_host.run("hook-env", "--shell", "bash", env=env, cwd=repo)
        assert out.returncode == 0, (temperature, out.stderr)
        assert "export CUDA_HOME='%s'" % standard_host.path("/usr/local/cuda-13.0") in out.stdout
        assert_nothing_of(repo, canary, out.stdout)
        for args in (("use", "latest", "--shell", "bash"), ("use", "13", "--shell", "json"),
                     ("list", "--json"), ("current", "--json")):
            proc = standard_host.run(*args, env=env, cwd=repo)
            assert proc.returncode == 0, (temperature, args, proc.stderr)
            assert_nothing_of(repo, canary, proc.stdout)
        roots = [item["root"] for item in json.loads(standard_host.run("list", "--json", env=env, cwd=repo).stdout)]
        assert not [r for r in roots if r.startswith(str(repo))]
    # verify asks everything a verdict can (gcc, nvcc, the driver, torch) without leaving the repo
    proc = standard_host.run("verify", "13.0", "--json", env=env, cwd=repo)
    assert_nothing_of(repo, canary, proc.stdout)


@pytest.mark.parametrize("shell", SHELLS)
def test_real_hooks_entering_a_hostile_repo_run_nothing_of_it(standard_host, tmp_path, shell):
    canary = tmp_path / "canary"
    repo = make_repo(tmp_path, canary)
    env = hostile_env(standard_host, tmp_path, "leading-dot")
    env["PATH"] = env["PATH"].replace(".:bin:", "", 1)  # the shell itself must start cudaswitch
    show = {"bash": 'printf "H=<%s> P=<%s>\\n" "$CUDA_HOME" "$PATH"',
            "zsh": 'printf "H=<%s> P=<%s>\\n" "$CUDA_HOME" "$PATH"',
            "fish": 'printf "H=<%s> P=<%s>\\n" "$CUDA_HOME" (string join : $PATH)'}[shell]
    dotted = {"bash": "PATH=.:bin:$PATH", "zsh": "PATH=.:bin:$PATH", "fish": "set -gx PATH . bin $PATH"}[shell]
    for temperature in ("cold", "warm"):
        sh = Interactive(shell, env, cwd=str(tmp_path))
        try:
            sh.run(INIT[shell])
            sh.run(dotted)  # from here on only builtins run: `.` is first on PATH
            sh.run("cd %s" % repo)
            shown = [l for l in sh.run(show).splitlines() if l.startswith("H=<")][-1]
            sh.run("cudaswitch use latest")
            after_use = [l for l in sh.run(show).splitlines() if l.startswith("H=<")][-1]
        finally:
            sh.close()
        assert shown.startswith("H=<%s>" % standard_host.path("/usr/local/cuda-13.0")), (temperature, shown)
        assert not canary.exists(), (temperature, canary.read_text())
        for line in (shown, after_use):
            assert str(repo) not in line.replace("P=<.:bin:", "P=<")
    shutil.rmtree(tmp_path / "cache", ignore_errors=True)
