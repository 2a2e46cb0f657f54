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
