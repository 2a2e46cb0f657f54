"""NVIDIA's CUDA 12 wheels hold no nvcc: `install 12.x --from pypi` says "runtime only, no nvcc"
before it downloads anything, and names the source of a complete 12.x (the redist archives,
`cudaswitch install 12.x`). Local wheels through pip (tests/release_wheels.py), no network."""

from tests import release_wheels
from tests.install_support import drop_installed_trees  # noqa: F401 (autouse fixture)


def test_install_of_a_12_x_wheel_says_runtime_only_before_downloading(host, tmp_path):
    env = release_wheels.index_of(tmp_path / "links", "12.9.1.0")
    proc = host.run("install", "12.9", "--from", "pypi", "-c", "cudart", env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    [note] = [i for i, line in enumerate(lines) if "runtime only, no nvcc" in line]
    first_download = next(i for i, line in enumerate(lines) if "unpacked" in line or "pip:" in line)
    assert note < first_download, proc.stderr
    assert "cudaswitch install 12.9 (NVIDIA's redist archives" in lines[note]


def test_a_13_x_wheel_install_says_nothing_of_runtime_only(host, tmp_path):
    env = release_wheels.index_of(tmp_path / "links", "13.3.0.0")
    proc = host.run("install", "13.3", "--from", "pypi", "-c", "cudart", env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "runtime only" not in proc.stderr


def test_a_pypi_12_x_toolkit_leaves_no_other_nvcc_after_use_or_in_exec(host, tmp_path):
    """The toolkit `install 12.9 --from pypi` really makes has no nvcc; the host mirrors a workstation
    whose runfile 13.0 put nvcc on PATH (/usr/local/bin). After `use 12.9` in real bash, zsh and
    fish, `command -v nvcc` names no 13.0 nvcc (the stand-in says so), and exec runs none."""
    import os

    from tests import kits, shellrun

    cuda13 = kits.install_classic(kits.cuda13("13.0"), host.path("/usr/local/cuda-13.0"), "13.0")
    general = host.path("/usr/local/bin")
    general.mkdir(parents=True)
    os.symlink(cuda13 / "bin" / "nvcc", general / "nvcc")
    env = {**release_wheels.index_of(tmp_path / "links", "12.9.1.0"),
           "PATH": "%s:%s" % (general, host.env["PATH"])}
    proc = host.run("install", "12.9", "--from", "pypi", "-c", "cudart", env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    shell_env = {**host.env, "PATH": env["PATH"]}
    # The test's runtime wheel says 77.1.5 (tests/hostile_wheels.py), as NVIDIA's 12.9.1 says 12.9.79:
    # the toolkit is named by its runtime's version where it has no nvcc.
    [made] = [r for r in host.list_json().values() if r["sources"] == ["managed"]]
    request = made["version"]
    for shell in shellrun.SHELLS:
        lines = [shellrun.EVAL_USE[shell].format(cmd="use " + request), "command -v nvcc", "nvcc --version",
                 "echo rc=$status" if shell == "fish" else "echo rc=$?"]
        out = shellrun.script(shell, lines, shell_env)
        assert "cuda-13.0" not in out.stdout and "release 13.0" not in out.stdout, (shell, out.stdout)
        assert "rc=127" in out.stdout and "has no nvcc" in out.stderr, (shell, out.stdout, out.stderr)
    ran = host.run("exec", request, "--", "nvcc", "--version", env={"PATH": env["PATH"]})
    assert ran.returncode == 127 and "release 13.0" not in ran.stdout, (ran.stdout, ran.stderr)
