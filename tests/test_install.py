"""`cudaswitch install` builds real toolkits from NVIDIA's wheels
(through the pip the user has, with its index configuration) that nvcc, gcc, CMake and `use` accept;
the CUDA 12 wheels give an incomplete toolkit and say why; bad requests write nothing.

Every test runs the real CLI with the data dir in tmp; toolkit trees are removed after each module
to keep the disk use of a test run small."""

import json
import os
import re
import shutil
import subprocess

import pytest

from cudaswitch.install import wheels
from tests import kits
from tests.conftest import CUDASWITCH, Host
from tests.install_support import drop_installed_trees, managed_items, toolkits_dir  # noqa: F401 (autouse fixture)

KERNEL = """
__global__ void add(float *a, float b) { a[threadIdx.x] += b; }
int main() { float *d; cudaMalloc(&d, 4); add<<<1, 1>>>(d, 1.0f); return cudaDeviceSynchronize(); }
"""
CMAKE_PROJECT = "cmake_minimum_required(VERSION 3.18)\nproject(x LANGUAGES CUDA)\n"


def give_up_without_index(proc, what):
    """The CUDA 12 wheels come from the network index (PyPI); without it skip, or fail under CI."""
    if proc.returncode != 0 and "offers no cuda-toolkit release" in proc.stderr:
        kits._give_up("%s: the package index pip uses has no cuda-toolkit (%s)" % (what, proc.stderr.strip()))


@pytest.fixture(scope="module")
def installed13(tmp_path_factory):
    base = tmp_path_factory.mktemp("install13")
    (base / "root").mkdir()
    host = Host(base / "root", base / "work")
    proc = host.run("install", "13.0", "--json", timeout=600)
    yield host, proc
    shutil.rmtree(host.work / "data", ignore_errors=True)


def test_install_13_0_is_listed_as_managed_and_ok(installed13):
    host, proc = installed13
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert re.fullmatch(r"13\.0\.\d+", result["version"])
    assert "installed CUDA %s at %s" % (result["name"], result["root"]) in proc.stderr
    assert result["name"] == "%s (nvcc %s)" % (result["version"], result["components"]["nvcc"])
    assert "unpacked nvidia-cuda-nvcc 13.0." in proc.stderr  # progress on stderr
    [item] = managed_items(host)
    assert item["root"] == result["root"] == str(toolkits_dir(host) / result["version"])
    assert (item["status"], item["sources"], item["problems"]) == ("ok", ["managed"], [])
    assert item["short"] == "13.0" and item["nvcc"] == result["root"] + "/bin/nvcc"
    # nothing but the toolkit is left in the managed dir (its lock file went when the install ended)
    assert sorted(os.listdir(toolkits_dir(host))) == [result["version"]]


# version.json keys NVIDIA's installer uses for the components of the default install
VERSION_JSON_KEY = {"nvidia-cuda-nvcc": "cuda_nvcc", "nvidia-cuda-runtime": "cuda_cudart",
                    "nvidia-cuda-cccl": "cuda_cccl", "nvidia-cuda-crt": "cuda_crt", "nvidia-nvvm": "libnvvm"}


def test_version_json_carries_the_pinned_versions(installed13):
    """version.json says what the cuda-toolkit release pins (the requirements install reports,
    e.g. nvidia-cuda-nvcc==13.0.88.*), and nvcc itself agrees with it."""
    host, proc = installed13
    result = json.loads(proc.stdout)
    with open(os.path.join(result["root"], "version.json")) as handle:
        document = json.load(handle)
    assert document["cuda"]["version"] == result["version"]
    pinned = dict(re.fullmatch(r"([\w-]+)==([\d.]+)\.\*", r).groups() for r in result["requirements"])
    assert sorted(pinned) == sorted(VERSION_JSON_KEY)
    for wheel, key in VERSION_JSON_KEY.items():
        assert document[key]["version"] == pinned[wheel], key
    said = subprocess.run([result["nvcc"], "--version"], capture_output=True, text=True, timeout=60).stdout
    assert "V%s\n" % document["cuda_nvcc"]["version"] in said
    cudart = document["cuda_cudart"]["version"]
    assert os.path.isfile(os.path.join(result["root"], "lib64", "libcudart.so." + cudart))
    assert os.readlink(os.path.join(result["root"], "lib64", "libcudart.so.13")) == "libcudart.so." + cudart
    assert os.path.islink(os.path.join(result["root"], "lib64", "libcudart.so"))


def test_reported_size_is_what_du_says(installed13):
    host, proc = installed13
    result = json.loads(proc.stdout)
    du = subprocess.run(["du", "-sb", result["root"]], capture_output=True, text=True, timeout=120, check=True)
    assert abs(result["size_bytes"] - int(du.stdout.split()[0])) <= int(du.stdout.split()[0]) / 100


def test_installed_nvcc_compiles_and_links_with_host_gcc(installed13, tmp_path):
    kits.require("gcc")
    host, proc = installed13
    nvcc = json.loads(proc.stdout)["nvcc"]
    version = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60)
    assert "release 13.0," in version.stdout
    (tmp_path / "k.cu").write_text(KERNEL)
    built = subprocess.run([nvcc, "-c", "k.cu", "-o", "k.o"], cwd=tmp_path, capture_output=True, text=True,
                           timeout=300)
    assert built.returncode == 0, built.stderr
    linked = subprocess.run([nvcc, "k.o", "-o", "k"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert linked.returncode == 0, linked.stderr
    assert (tmp_path / "k").stat().st_size > 0


def test_cmake_cuda_language_accepts_the_tree(installed13, tmp_path):
    cmake = kits.require("cmake")
    host, proc = installed13
    root = json.loads(proc.stdout)["root"]
    (tmp_path / "CMakeLists.txt").write_text(
        CMAKE_PROJECT + "find_package(CUDAToolkit REQUIRED)\n"
        "message(STATUS \"toolkit ${CUDAToolkit_VERSION} at ${CUDAToolkit_BIN_DIR}\")\n")
    out = subprocess.run([cmake, "-S", str(tmp_path), "-B", str(tmp_path / "build"),
                          "-DCMAKE_CUDA_COMPILER=%s/bin/nvcc" % root],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "The CUDA compiler identification is NVIDIA 13.0" in out.stdout
    assert "toolkit 13.0." in out.stdout and "at %s/bin" % root in out.stdout


def test_use_switches_a_bash_to_the_managed_toolkit(installed13, tmp_path):
    bash = kits.require("bash")
    host, proc = installed13
    root = json.loads(proc.stdout)["root"]
    (tmp_path / "k.cu").write_text(KERNEL)
    script = 'eval "$(cudaswitch use managed:13.0 --shell bash)" && command -v nvcc && nvcc --version ' \
             '&& nvcc -c k.cu -o k.o && echo "CUDA_HOME=$CUDA_HOME"'
    env = dict(host.env, PATH="/usr/bin:/bin:" + os.path.dirname(shutil.which("cudaswitch")))
    out = subprocess.run([bash, "--noprofile", "--norc", "-c", script], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == root + "/bin/nvcc"
    assert "release 13.0," in out.stdout and "CUDA_HOME=" + root in out.stdout


def test_install_again_says_already_installed(installed13):
    host, proc = installed13
    again = host.run("install", "13.0", timeout=600)
    assert again.returncode == 0, again.stderr
    assert "is already installed at %s" % json.loads(proc.stdout)["root"] in again.stderr


def test_install_12_4_from_pypi_is_incomplete_and_says_why(host):
    """Asked for explicitly (--from pypi): the CUDA 12 wheels hold no nvcc, and the install says so."""
    proc = host.run("install", "12.4", "--from", "pypi", "--json", timeout=600)
    give_up_without_index(proc, "install 12.4")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    root = result["root"]
    assert result["status"] == "incomplete" and result["nvcc"] is None
    assert re.search(r"note: NVIDIA publishes no nvcc in its CUDA 12 wheels: .*ptxas.*libcudart 12\.4\.\d+.*"
                     r"cannot compile \.cu files", proc.stderr)
    cudart = [n for n in os.listdir(root + "/lib64") if re.fullmatch(r"libcudart\.so\.12\.4\.\d+", n)]
    assert cudart, os.listdir(root + "/lib64")
    ptxas = subprocess.run([root + "/bin/ptxas", "--version"], capture_output=True, text=True, timeout=60)
    assert "release 12.4," in ptxas.stdout
    [item] = managed_items(host)
    assert item["root"] == root and item["status"] == "incomplete" and item["short"] == "12.4"
    assert any("no nvcc" in p and "cannot compile .cu" in p for p in item["problems"])
    shutil.rmtree(host.work / "data")


@pytest.mark.parametrize("request_text, says", [
    ("99.1", "no CUDA release matches '99.1' on the package index pip uses, "),
    ("banana", "not a toolkit request: 'banana'"),
    ("system", "install takes a CUDA version, not 'system'"),
    ("conda:12.4", "install makes managed toolkits; 'conda:12.4' names the conda source"),
])
def test_bad_requests_fail_with_one_line_and_write_nothing(host, request_text, says):
    proc = host.run("install", request_text, timeout=300)
    assert proc.returncode != 0
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("cudaswitch: error: ") and says in lines[0], proc.stderr
    assert not (host.work / "data").exists()


def test_components_choose_the_wheels(host):
    proc = host.run("install", "13.0", "--components", "cudart", "--json", timeout=600)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["requirements"] == [r for r in result["requirements"] if r.startswith("nvidia-cuda-runtime==")]
    assert result["status"] == "incomplete" and not os.path.exists(result["root"] + "/bin/nvcc")
    assert "note: nvcc was not among the components installed" in proc.stderr
    assert "Add nvcc to --components" in proc.stderr
    [item] = managed_items(host)
    assert item["status"] == "incomplete" and item["components"]["cudart"].startswith("13.0.")
    assert item["version_json"]["cuda_cudart"] == item["components"]["cudart"]


def test_unknown_component_fails_with_one_line_and_writes_nothing(host):
    proc = host.run("install", "13.0", "--components", "nvcc,banana", timeout=300)
    assert proc.returncode == 2
    [line] = proc.stderr.splitlines()
    assert line.startswith("cudaswitch: error: CUDA 13.0.") and "has no component banana (components: " in line
    assert "cublas" in line and "nvcc" in line
    assert not (host.work / "data").exists()


def pip_env_with_only(links):
    """pip with no config files and no index: only the wheels in `links` exist (PIP_* as a user sets them)."""
    return {"PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(links),
            "PIP_INDEX_URL": "", "PIP_EXTRA_INDEX_URL": ""}


def test_offline_index_fails_with_one_line(host, tmp_path):
    (tmp_path / "empty").mkdir()
    proc = host.run("install", "13.0", env=pip_env_with_only(tmp_path / "empty"), timeout=300)
    assert proc.returncode == 1
    empty = tmp_path / "empty"
    assert proc.stderr.splitlines() == [
        "cudaswitch: error: the package index pip uses offers no cuda-toolkit release: %s (and PyPI (https://pypi.org"
        "/simple) unless pip's no-index is set) (offline, or another index? see `pip config list`)" % empty]
    assert not (host.work / "data").exists()


def test_corrupt_wheel_leaves_nothing(host, tmp_path):
    """Mirrors a mirror (or a proxy) serving a truncated wheel: the real metapackage and component
    wheels, with nvidia-nvvm cut off after 1 MB."""
    links = tmp_path / "links"
    links.mkdir()
    good = subprocess.run(["python3", "-m", "pip", "download", "--no-deps", "-q", "-d", str(links),
                           "cuda-toolkit==13.0.*"], capture_output=True, text=True, timeout=300)
    assert good.returncode == 0, good.stderr
    [meta] = links.glob("cuda_toolkit-*.whl")
    pins = wheels.requirements_for(wheels.component_pins(meta), wheels.DEFAULT_COMPONENTS)
    got = subprocess.run(["python3", "-m", "pip", "download", "--no-deps", "-q", "-d", str(links), *pins],
                         capture_output=True, text=True, timeout=300)
    assert got.returncode == 0, got.stderr
    [nvvm] = links.glob("nvidia_nvvm-*.whl")
    data = nvvm.read_bytes()
    nvvm.write_bytes(data[:1 << 20])
    proc = host.run("install", "13.0", env=pip_env_with_only(links), timeout=600)
    assert proc.returncode == 1
    errors = [line for line in proc.stderr.splitlines() if line.startswith("cudaswitch: error:")]
    assert len(errors) == 1 and "nvidia-nvvm" in errors[0] and "nothing was installed" in errors[0], proc.stderr
    assert [e for e in os.listdir(toolkits_dir(host)) if not e.startswith(".lock-")] == []
    assert managed_items(host) == []


def run_with_user_pip_conf(host, home, links):
    """The CLI with no PIP_* variables and a ~/.config/pip/pip.conf that allows only `links`:
    what a user who set up their own index (a mirror, a wheelhouse) has."""
    conf = home / ".config/pip/pip.conf"
    conf.parent.mkdir(parents=True, exist_ok=True)
    conf.write_text("[global]\nno-index = true\nfind-links = %s\n" % links)
    env = {k: v for k, v in host.env.items() if not k.startswith(("PIP_", "XDG_CONFIG"))}
    env["HOME"] = str(home)
    return subprocess.run([CUDASWITCH, "install", "13.0"], env=env, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)


def test_install_asks_the_index_of_the_users_pip_conf(host, tmp_path):
    links = tmp_path / "wheelhouse"
    links.mkdir()
    offline = run_with_user_pip_conf(host, tmp_path / "home", links)
    assert offline.returncode == 1
    assert offline.stderr.splitlines() == [
        "cudaswitch: error: the package index pip uses offers no cuda-toolkit release: %s (and PyPI (https://pypi.org"
        "/simple) unless pip's no-index is set) (offline, or another index? see `pip config list`)" % links]
    # the wheelhouse gets the metapackage only: the release is found there, its components are not
    got = subprocess.run(["python3", "-m", "pip", "download", "--no-deps", "-q", "-d", str(links),
                          "cuda-toolkit==13.0.*"], capture_output=True, text=True, timeout=300)
    assert got.returncode == 0, got.stderr
    partial = run_with_user_pip_conf(host, tmp_path / "home", links)
    assert partial.returncode == 1
    assert re.search(r"^cudaswitch: error: pip could not download nvidia-cuda-cccl==13\.0\.\d+\.\* .*"
                     r"\(see `pip config list`; nothing was installed\)$", partial.stderr, re.M), partial.stderr
    assert [e for e in os.listdir(toolkits_dir(host)) if not e.startswith(".lock-")] == []
    assert managed_items(host) == []
