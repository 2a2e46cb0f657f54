"""real bash, zsh and fish eval what `use`/`off` print and then run the
real nvcc; the loader really resolves libcudart from the switched LD_LIBRARY_PATH."""

import json
import shutil

import pytest

from tests import kits
from tests.shellrun import DUMP, EVAL_USE, INIT, SHELLS, script

CUDART_LOADED = ("python3 -c \"import ctypes; ctypes.CDLL('libcudart.so.13'); "
                 "print('CUDART=' + [l.split()[-1] for l in open('/proc/self/maps') if 'libcudart' in l][0])\"")


def sections(stdout):
    """The JSON dumps and marked lines a test script printed, in order."""
    return [line for line in stdout.splitlines() if line.startswith(("{", "CUDART=", "nvcc:", "Cuda comp"))]


def start_env(host):
    """A user's environment before cudaswitch: CUDA_HOME set by hand, CUDA_PATH and
    LD_LIBRARY_PATH unset, an empty entry in PATH (byte-exact restore must keep it)."""
    env = dict(host.env)
    env["CUDA_HOME"] = "/opt/old cuda"
    env["PATH"] = env["PATH"] + "::/usr/games"
    env.pop("CUDA_PATH", None)
    env.pop("LD_LIBRARY_PATH", None)
    return env


@pytest.mark.parametrize("shell", SHELLS)
def test_use_then_nvcc_and_off_restores_byte_exact(standard_host, shell):
    use = EVAL_USE[shell]
    lines = [DUMP, use.format(cmd="use 13.1"), "nvcc --version | grep release", DUMP, CUDART_LOADED,
             use.format(cmd="use 13.0"), "nvcc --version | grep release", DUMP, CUDART_LOADED,
             use.format(cmd="off"), DUMP]
    proc = script(shell, lines, start_env(standard_host))
    assert proc.returncode == 0, proc.stderr
    out = [line for line in proc.stdout.splitlines() if line.strip()]
    before, after_131, after_130, after_off = (json.loads(l) for l in out if l.startswith("{"))
    releases = [l for l in out if "release" in l]
    loaded = [l.split("=", 1)[1] for l in out if l.startswith("CUDART=")]
    root131 = str(standard_host.path("/usr/local/cuda-13.1"))
    root130 = str(standard_host.path("/usr/local/cuda-13.0"))
    assert "release 13.1" in releases[0] and "release 13.0" in releases[1]
    assert after_131["CUDA_HOME"] == root131 and after_130["CUDA_HOME"] == root130
    assert after_131["CUDACXX"] == root131 + "/bin/nvcc"
    assert loaded[0].startswith(root131 + "/") and loaded[1].startswith(root130 + "/")
    assert root131 not in after_130["PATH"] and root131 not in (after_130["LD_LIBRARY_PATH"] or "")
    assert after_off == before
    assert before["CUDA_PATH"] is None and before["LD_LIBRARY_PATH"] is None


def test_exec_runs_command_with_toolkit_and_passes_exit_status(standard_host):
    proc = standard_host.run("exec", "13.0", "--", "sh", "-c", "nvcc --version; exit 7")
    assert proc.returncode == 7
    assert "release 13.0" in proc.stdout


def test_failed_use_prints_nothing_to_stdout(standard_host):
    proc = standard_host.run("use", "11.8", "--shell", "bash")
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "11.8" in proc.stderr


WEIRD = "cuda it's \"odd\" $HOME `touch {canary}` $(touch {canary}) ;&|\n\tüñí ✓"


@pytest.fixture(scope="module")
def weird_host(tmp_path_factory):
    """A toolkit root whose path holds every character a shell could misread, registered in
    config.toml (mirrors a home dir on a Mac-formatted share or a user who names things freely)."""
    from tests.conftest import Host

    base = tmp_path_factory.mktemp("weird")
    host = Host(base / "root", base / "work")
    canary = base / "canary"
    root = base / "root" / "opt" / WEIRD.format(canary=canary)
    kits.install_classic(kits.cuda13("13.1"), root, "13.1")
    (base / "work" / "config").mkdir(parents=True)
    (base / "work" / "config" / "config.toml").write_text('toolkits = [%s]\n' % json.dumps(str(root)))
    return host, root, canary


@pytest.mark.parametrize("shell", SHELLS)
def test_hostile_characters_in_root_switch_and_execute_nothing(weird_host, shell):
    host, root, canary = weird_host
    use = EVAL_USE[shell]
    proc = script(shell, [DUMP, use.format(cmd="use user:13.1"), "nvcc --version | grep release", DUMP,
                          use.format(cmd="off"), DUMP], dict(host.env))
    assert proc.returncode == 0, proc.stderr
    before, during, after = (json.loads(l) for l in proc.stdout.splitlines() if l.startswith("{"))
    assert "release 13.1" in proc.stdout
    assert during["CUDA_HOME"] == str(root)
    assert during["PATH"].split(":")[0] == str(root / "bin")
    assert after == before
    assert not canary.exists(), "a value was executed by the shell"


@pytest.mark.parametrize("fmt", ["json", "dotenv", "github"])
def test_non_shell_formats_carry_the_same_values(standard_host, fmt):
    proc = standard_host.run("use", "13.1", "--shell", fmt)
    assert proc.returncode == 0, proc.stderr
    root = str(standard_host.path("/usr/local/cuda-13.1"))
    if fmt == "json":
        data = json.loads(proc.stdout)
        assert data["set"]["CUDA_HOME"] == root and data["set"]["PATH"].startswith(root + "/bin:")
    else:
        assert "CUDA_HOME=%s" % root in proc.stdout.splitlines()  # dotenv too: unquoted, as docker reads it


def test_cmake_and_torch_rule_pick_the_switched_toolkit(standard_host, tmp_path):
    """torch's own rule (torch.utils.cpp_extension._find_cuda_home: $CUDA_HOME, $CUDA_PATH, then
    `which nvcc`, run by a real torch) and CMake's CUDA language detection ($CUDACXX / nvcc on
    PATH) must both land on the chosen toolkit."""
    from tests.verify_support import torch_venv

    cmake = shutil.which("cmake") or kits.require("cmake")
    (tmp_path / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.18)\nproject(x LANGUAGES CUDA)\n")
    torch_rule = ("%s -c \"from torch.utils.cpp_extension import _find_cuda_home; "
                  "print('TORCH_CUDA_HOME=' + _find_cuda_home())\"" % (torch_venv() / "bin" / "python"))
    for version in ("13.0", "13.1"):
        build = tmp_path / ("build-" + version)
        proc = script("bash", [EVAL_USE["bash"].format(cmd="use " + version), torch_rule,
                               "%s -S %s -B %s 2>&1 | grep 'CUDA compiler identification'" % (cmake, tmp_path, build)],
                      dict(standard_host.env), timeout=300)
        assert proc.returncode == 0, proc.stderr
        root = str(standard_host.path("/usr/local/cuda-" + version))
        assert "TORCH_CUDA_HOME=" + root in proc.stdout
        assert "NVIDIA %s." % version in proc.stdout


@pytest.mark.parametrize("shell", SHELLS)
def test_path_entry_that_is_not_utf8_survives_use_and_off(standard_host, shell, tmp_path):
    """A PATH entry in Latin-1 (an old NFS home, a mounted Windows share) reaches Python as a lone
    surrogate; under a strict UTF-8 stdout (PYTHONIOENCODING=utf-8, most desktop locales) printing
    it must neither crash nor alter a byte."""
    latin1_dir = tmp_path / b"caf\xe9".decode("utf-8", "surrogateescape")
    latin1_dir.mkdir()
    env = {**start_env(standard_host), "PYTHONIOENCODING": "utf-8"}
    env["PATH"] = str(latin1_dir) + ":" + env["PATH"]
    use = EVAL_USE[shell]
    proc = script(shell, [DUMP, use.format(cmd="use 13.1 --no-verify"), DUMP, use.format(cmd="off"), DUMP], env)
    assert proc.returncode == 0, proc.stderr
    before, during, after = (json.loads(l) for l in proc.stdout.splitlines() if l.startswith("{"))
    root = str(standard_host.path("/usr/local/cuda-13.1"))
    assert during["CUDA_HOME"] == root and during["PATH"].split(":")[:2] == [root + "/bin", str(latin1_dir)]
    assert after == before and before["PATH"].startswith(str(latin1_dir) + ":")


def test_json_format_escapes_bytes_that_are_not_utf8(standard_host, tmp_path):
    latin1_dir = str(tmp_path / b"caf\xe9".decode("utf-8", "surrogateescape"))
    env = {"PATH": latin1_dir + ":" + standard_host.env["PATH"], "PYTHONIOENCODING": "utf-8"}
    proc = standard_host.run("use", "13.1", "--shell", "json", "--no-verify", env=env)
    assert proc.returncode == 0, proc.stderr
    assert latin1_dir in json.loads(proc.stdout)["set"]["PATH"].split(":")


STATUS = {"bash": 'echo "status=$?"', "zsh": 'echo "status=$?"', "fish": 'echo "status=$status"'}


@pytest.mark.parametrize("shell", SHELLS)
def test_shell_function_returns_the_programs_exit_status(standard_host, shell):
    """`cudaswitch off` with nothing to undo succeeds; a usage error is 2 and a missing toolkit 1,
    as scripts that test `cudaswitch use X || ...` expect (fish's `string collect` used to turn
    every empty output into 1)."""
    lines = [INIT[shell], "cudaswitch off", STATUS[shell], "cudaswitch use --bogus", STATUS[shell],
             "cudaswitch use 11.8", STATUS[shell]]
    proc = script(shell, lines, dict(standard_host.env))
    assert [l for l in proc.stdout.splitlines() if l.startswith("status=")] == ["status=0", "status=2", "status=1"]


def test_a_view_whose_path_holds_a_colon_is_refused_not_split(standard_host, tmp_path):
    """A conda toolkit goes on PATH through a view in the cache dir; a cache dir with ':' in its
    name (a mounted share, an odd $XDG_CACHE_HOME) would split that PATH entry in two."""
    proc = standard_host.run("use", "conda:13", "--shell", "json", "--no-verify",
                             env={"CUDASWITCH_CACHE_DIR": str(tmp_path / "ca:che")})
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "cannot go on PATH" in proc.stderr
