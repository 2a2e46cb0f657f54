"""A shell that already has CUDA before cudaswitch runs: the lines NVIDIA's install guide tells users
to put in ~/.bashrc (PATH, LD_LIBRARY_PATH, CUDA_HOME of toolkit A), run by real bash, zsh and fish.
`use B` must leave nothing of A; nvcc, CUDA_HOME and the libcudart the loader maps are B's;
`current` says A (hand-set) before and B (shell) after; `off` restores every byte."""

import json
import os

import pytest

from tests.shellrun import EVAL_USE, SHELLS, script

VARS = ("PATH", "LD_LIBRARY_PATH", "CPATH", "LIBRARY_PATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH",
        "CMAKE_PREFIX_PATH", "PKG_CONFIG_PATH", "MANPATH", "CUDA_HOME", "CUDA_PATH", "CUDA_ROOT", "CUDA_DIR",
        "CUDACXX", "CUDAToolkit_ROOT", "CUDASWITCH_STATE")
DUMP = ("python3 -c 'import os, json, sys; print(json.dumps({n: os.environ.get(n) for n in sys.argv[1:]}))' "
        + " ".join(VARS))
CUDART_LOADED = ("python3 -c \"import ctypes; ctypes.CDLL('libcudart.so.13'); "
                 "print('CUDART=' + [l.split()[-1] for l in open('/proc/self/maps') if 'libcudart' in l][0])\"")


def rc_lines(shell, root):
    """What ~/.bashrc (or config.fish) holds after following NVIDIA's post-install steps, plus the
    CUDA_HOME and CPATH lines that build guides add."""
    if shell == "fish":
        return ["set -gx PATH %s/bin $PATH" % root, "set -gx LD_LIBRARY_PATH %s/lib64" % root,
                "set -gx CUDA_HOME %s" % root, "set -gx CPATH %s/include" % root]
    return ["export PATH=%s/bin${PATH:+:${PATH}}" % root,
            "export LD_LIBRARY_PATH=%s/lib64${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}" % root,
            "export CUDA_HOME=%s" % root, "export CPATH=%s/include" % root]


def entries_under(env, root):
    found = []
    for name in VARS[:9]:
        found += [(name, e) for e in (env.get(name) or "").split(":")
                  if e and os.path.realpath(e).startswith(os.path.realpath(root) + "/")]
    return found


@pytest.mark.parametrize("shell", SHELLS)
def test_use_over_hand_exported_toolkit_replaces_it_and_off_restores(standard_host, shell):
    a = str(standard_host.path("/usr/local/cuda-13.0"))
    b = str(standard_host.path("/usr/local/cuda-13.1"))
    use = EVAL_USE[shell]
    lines = rc_lines(shell, a) + [
        DUMP, "nvcc --version | grep release", "echo CURRENT=$(cudaswitch current | head -n 1)",
        use.format(cmd="use 13.1"),
        DUMP, "nvcc --version | grep release", CUDART_LOADED, "echo CURRENT=$(cudaswitch current | head -n 1)",
        "cudaswitch current --json",
        use.format(cmd="off"), DUMP, "nvcc --version | grep release"]
    proc = script(shell, lines, dict(standard_host.env))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    dumps = [json.loads(line) for line in out if line.startswith('{"PATH"')]
    before, during, after = dumps
    releases = [line for line in out if "release" in line]
    current = [line[len("CURRENT="):] for line in out if line.startswith("CURRENT=")]
    info = json.loads(next(line for line in out if line.startswith('{"version"')))

    assert entries_under(before, a) and before["CUDA_HOME"] == a
    assert "release 13.0" in releases[0]
    assert current[0].startswith("13.0.") and current[0].endswith("(hand-set PATH)"), current[0]

    assert entries_under(during, a) == [], "toolkit A is still on the paths"
    assert during["CPATH"] is None  # it held only A's include dir
    assert "release 13.1" in releases[1]
    assert during["CUDA_HOME"] == b and during["CUDACXX"] == b + "/bin/nvcc"
    loaded = next(line for line in out if line.startswith("CUDART="))[len("CUDART="):]
    assert loaded.startswith(b + "/"), loaded
    assert current[1] == "%s %s (shell)" % (info["version"], b) and info["version"].startswith("13.1.")
    assert info["reason"] == "shell" and info["agree"] and info["nvcc"]["root"] == b

    assert after == before  # byte-exact, the state variable gone
    assert "release 13.0" in releases[2]


@pytest.mark.parametrize("shell", SHELLS)
def test_user_changes_while_switched_survive_off(standard_host, shell, tmp_path):
    """`export CUDA_HOME=...` and a PATH prepend made after `use` are the user's: `off` keeps both
    and still takes the switched toolkit away and brings A back."""
    a = str(standard_host.path("/usr/local/cuda-13.0"))
    b = str(standard_host.path("/usr/local/cuda-13.1"))
    mine = tmp_path / "my tools"
    mine.mkdir()
    use = EVAL_USE[shell]
    edits = (["set -gx PATH '%s' $PATH" % mine, "set -gx CUDA_HOME /opt/mine"] if shell == "fish" else
             ["export PATH='%s':$PATH" % mine, "export CUDA_HOME=/opt/mine"])
    lines = rc_lines(shell, a) + [DUMP, use.format(cmd="use 13.1 --no-verify")] + edits + [use.format(cmd="off"), DUMP]
    proc = script(shell, lines, dict(standard_host.env))
    assert proc.returncode == 0, proc.stderr
    before, after = (json.loads(line) for line in proc.stdout.splitlines() if line.startswith('{"PATH"'))
    assert after["CUDA_HOME"] == "/opt/mine"
    assert after["PATH"] == "%s:%s" % (mine, before["PATH"])
    assert b not in after["PATH"] and after["LD_LIBRARY_PATH"] == before["LD_LIBRARY_PATH"]
    assert after["CPATH"] == before["CPATH"] == a + "/include"


PRINT = {"bash": 'printf "P=<%s|%s|%s>\\n" "$PATH" "$LD_LIBRARY_PATH" "$CUDA_HOME"',
         "zsh": 'printf "P=<%s|%s|%s>\\n" "$PATH" "$LD_LIBRARY_PATH" "$CUDA_HOME"',
         "fish": 'printf "P=<%s|%s|%s>\\n" "$PATH" "$LD_LIBRARY_PATH" "$CUDA_HOME"'}


def printed(output):
    line = [l for l in output.splitlines() if l.startswith("P=<")][-1]
    path, ld, home = line[3:-1].split("|")
    return path.replace(" ", ":"), ld.replace(" ", ":"), home  # fish prints its PATH list space-joined


@pytest.mark.parametrize("shell", SHELLS)
def test_entering_a_project_replaces_hand_set_cuda_and_leaving_restores_it(standard_host, shell, tmp_path):
    """The hook in a real interactive shell whose rc file exported toolkit A: entering a project
    pinned to B leaves nothing of A and runs B's nvcc; leaving gives back A exactly."""
    from tests.shellrun import INIT, Interactive

    a = str(standard_host.path("/usr/local/cuda-13.0"))
    b = str(standard_host.path("/usr/local/cuda-13.1"))
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / ".cudaversion").write_text("13.1\n")
    sh = Interactive(shell, standard_host.env, cwd=str(tmp_path))
    try:
        for line in rc_lines(shell, a) + [INIT[shell]]:
            sh.run(line)
        before = printed(sh.run(PRINT[shell]))
        sh.run("cd proj")
        inside = printed(sh.run(PRINT[shell]))
        assert "release 13.1" in sh.run("nvcc --version")
        sh.run("cd ..")
        after = printed(sh.run(PRINT[shell]))
    finally:
        sh.close()
    assert before[2] == a and before[0].startswith(a + "/bin:")
    assert inside[2] == b and inside[0].startswith(b + "/bin:")
    assert not [e for e in (inside[0] + ":" + inside[1]).split(":") if e.startswith(a)]
    assert after == before


def conda_activation(env_root):
    """What `conda activate cu13` leaves in bash for an env with conda-forge's cuda-nvcc: the env's
    bin first, CONDA_PREFIX, and the lines of cuda-nvcc's activate.sh (outside conda-build)."""
    targets = env_root + "/targets/x86_64-linux"
    return ["export CONDA_PREFIX=%s CONDA_DEFAULT_ENV=cu13 CXX=/usr/bin/g++" % env_root,
            "export PATH=%s/bin:$PATH" % env_root,
            'export CFLAGS="${CFLAGS} -I%s/include"' % targets,
            'export CPPFLAGS="${CPPFLAGS} -I%s/include"' % targets,
            'export CXXFLAGS="${CXXFLAGS} -I%s/include"' % targets,
            'export LDFLAGS="${LDFLAGS} -L%s/lib -L%s/lib/stubs"' % (targets, targets),
            'export NVCC_PREPEND_FLAGS="${NVCC_PREPEND_FLAGS} -ccbin=${CXX}"']


FLAG_DUMP = ("python3 -c 'import os, json; print(\"FLAGS\" + json.dumps({n: os.environ.get(n) for n in "
             "(\"PATH\", \"CFLAGS\", \"CPPFLAGS\", \"CXXFLAGS\", \"LDFLAGS\", \"NVCC_PREPEND_FLAGS\", \"CUDA_HOME\", "
             "\"CUDASWITCH_STATE\")}))'")
# The CUDA runtime version a host compile with the user's CFLAGS and the switched CUDA_HOME sees.
HEADER_SEEN = ("printf '#include <cuda_runtime_api.h>\\nSEEN CUDART_VERSION\\n' | "
               "gcc $CFLAGS -I\"${CUDA_HOME:-/nonexistent}/include\" -E -x c - | grep '^SEEN'")


def test_switching_away_from_a_conda_env_neutralises_its_cuda_flags(standard_host):
    """conda-forge's cuda-nvcc puts `-I$CONDA_PREFIX/targets/x86_64-linux/include` in CFLAGS: a build
    would compile against the env's 13.0 headers after `use 13.1`. The switch takes those words out
    (and says so), keeps the env's python on PATH, and `off` puts every byte back."""
    env_root = str(standard_host.path("/home/tester/miniconda3/envs/cu13"))
    b = str(standard_host.path("/usr/local/cuda-13.1"))
    lines = conda_activation(env_root) + [
        FLAG_DUMP, "echo CURRENT=$(cudaswitch current | head -n 1)", HEADER_SEEN,
        EVAL_USE["bash"].format(cmd="use 13.1 --no-verify"), FLAG_DUMP, HEADER_SEEN,
        "nvcc --version | grep release",
        EVAL_USE["bash"].format(cmd="off"), FLAG_DUMP]
    proc = script("bash", lines, dict(standard_host.env))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    before, during, after = (json.loads(l[5:]) for l in out if l.startswith("FLAGS"))
    seen = [l for l in out if l.startswith("SEEN")]
    current = next(l for l in out if l.startswith("CURRENT="))
    assert current.endswith("(conda env cu13)") and env_root in current, current
    assert seen == ["SEEN 13000", "SEEN 13010"]  # before: the env's header; after: the switched toolkit's
    assert "release 13.1" in proc.stdout
    assert during["CFLAGS"] == during["CPPFLAGS"] == during["CXXFLAGS"] == during["LDFLAGS"] == ""
    assert during["NVCC_PREPEND_FLAGS"] == before["NVCC_PREPEND_FLAGS"]  # the host compiler choice stays
    assert during["PATH"].split(":")[:2] == [b + "/bin", env_root + "/bin"]  # the env's python stays
    assert "took other toolkits' -I/-L dirs out of CFLAGS, CPPFLAGS, CXXFLAGS, LDFLAGS" in proc.stderr
    assert after == before


def test_current_names_each_part_when_nvcc_and_cuda_home_disagree(standard_host):
    """A guide's PATH line for 13.0 and a CUDA_HOME left at 13.1 (or at a directory that is no
    toolkit): `current` names both parts, one line each, and --json carries the same facts."""
    a = str(standard_host.path("/usr/local/cuda-13.0"))
    b = str(standard_host.path("/usr/local/cuda-13.1"))
    env = {"PATH": "%s/bin:/usr/bin:/bin" % a, "CUDA_HOME": b}
    lines = standard_host.run("current", env=env, check=True).stdout.splitlines()
    assert lines[0].endswith("%s (hand-set PATH)" % a) and lines[0].startswith("13.0.")
    assert lines[1] == "  nvcc on PATH: %s %s/bin/nvcc (hand-set PATH)" % (lines[0].split()[0], a)
    assert lines[2].startswith("  CUDA_HOME: 13.1.") and lines[2].endswith("%s (hand-set CUDA_HOME)" % b)
    info = json.loads(standard_host.run("current", "--json", env=env, check=True).stdout)
    assert info["agree"] is False and [d["root"] for d in info["disagreements"]] == [a, b]
    assert (info["cuda_home"]["reason"], info["cuda_home"]["detail"]) == ("hand-set", "CUDA_HOME")

    env["CUDA_HOME"] = "/opt/nothing here"
    lines = standard_host.run("current", env=env, check=True).stdout.splitlines()
    assert lines[-1] == "  CUDA_HOME: /opt/nothing here is no toolkit root (hand-set CUDA_HOME)"
    info = json.loads(standard_host.run("current", "--json", env=env, check=True).stdout)
    assert info["root"] == a and info["cuda_home"]["root"] is None and info["agree"] is False


def test_current_after_use_of_a_conda_toolkit_names_it_through_its_view(standard_host):
    """A conda toolkit goes on PATH as a view dir in the cache: `current` still names the env's
    toolkit and `shell`, not an unknown hand-set dir."""
    diff = json.loads(standard_host.run("use", "conda:13", "--shell", "json", "--no-verify", check=True).stdout)
    env = {**diff["set"], "PATH": diff["set"]["PATH"]}
    info = json.loads(standard_host.run("current", "--json", env=env, check=True).stdout)
    root = str(standard_host.path("/home/tester/miniconda3/envs/cu13"))
    assert (info["root"], info["reason"], info["agree"]) == (root, "shell", True)
    assert info["nvcc"]["value"].startswith(standard_host.env["CUDASWITCH_CACHE_DIR"])
