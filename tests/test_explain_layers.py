"""explain knows the messages of the layers around torch (NCCL, cuDNN's sub-libraries, the driver's
libcuda, the Python that was asked, CMake, a kernel's assert), reads a log piped to stdin, decodes
CUDA's integer versions, and confirms or refutes each cause on hand-made host states under
CUDASWITCH_ROOT (each test names the real host it mirrors), all through the `cudaswitch` command."""

import json
import os
import pty
import subprocess

import pytest

from tests.conftest import CUDASWITCH

# At least two real wordings per cause, as the tools print them.
MESSAGES = [
    ("nccl_missing", "ImportError: libnccl.so.2: cannot open shared object file: No such file or directory"),
    ("nccl_missing", "Could not load dynamic library 'libnccl.so.2'; dlerror: libnccl.so.2: cannot open shared "
                     "object file: No such file or directory"),
    ("nccl_symbol", "ImportError: /usr/local/lib/python3.8/dist-packages/torch/lib/libtorch_cuda.so: undefined "
                    "symbol: ncclRecv"),
    ("nccl_symbol", "OSError: /opt/conda/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so: undefined symbol: "
                    "ncclCommInitRankConfig"),
    ("nccl_version_mismatch", "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
                              "ProcessGroupNCCL.cpp:1190, invalid usage, NCCL version 2.10.3\nncclInvalidUsage: This "
                              "usually reflects invalid usage of NCCL library."),
    ("nccl_version_mismatch", "NCCL WARN NET/Socket : peer 10.0.0.2<45125> message truncated : receiving 524288 bytes "
                              "instead of 65536"),
    ("nccl_network", "torch.distributed.DistBackendError: [1] is setting up NCCL communicator and retrieving "
                     "ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error: "
                     "Socket Timeout"),
    ("nccl_network", "gpu-144-103:18553:18611 [0] include/socket.h:360 NCCL WARN Call to connect failed : "
                     "Connection timed out"),
    ("cudnn_sublibrary_mismatch", "RuntimeError: cuDNN error: CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH"),
    ("cudnn_sublibrary_mismatch", "RuntimeError: CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH"),
    ("libcuda_missing", "ImportError: libcuda.so.1: cannot open shared object file: No such file or directory"),
    ("libcuda_missing", "Could not load dynamic library 'libcuda.so.1'; dlerror: libcuda.so.1: cannot open shared "
                        "object file: No such file or directory; LD_LIBRARY_PATH: /usr/local/nvidia/lib64"),
    ("libcuda_missing", "RuntimeError: libcuda.so cannot found!"),
    ("torch_not_installed", "Traceback (most recent call last):\n  File \"train.py\", line 1, in <module>\n    "
                            "import torch\nModuleNotFoundError: No module named 'torch'"),
    ("torch_not_installed", "ImportError: No module named torch"),
    ("module_not_installed", "Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n    "
                             "from transformers import AutoModel\nModuleNotFoundError: No module named 'transformers'"),
    ("module_not_installed", "ImportError: No module named cv2"),
    ("cmake_no_nvcc", "CMake Error at CMakeLists.txt:3 (project):\n  No CMAKE_CUDA_COMPILER could be found.\n\n  Tell "
                      "CMake where to find the compiler by setting either the environment\n  variable \"CUDACXX\" or "
                      "the CMake cache entry CMAKE_CUDA_COMPILER"),
    ("cmake_no_nvcc", "CMake Error at /usr/share/cmake-3.22/Modules/CMakeDetermineCUDACompiler.cmake:179 (message):\n"
                      "  Failed to find nvcc.\n\n  Compiler requires the CUDA toolkit.  Please set the "
                      "CUDAToolkit_ROOT variable."),
    ("cmake_no_nvcc", "CMake Error at /usr/share/cmake/Modules/CMakeDetermineCUDACompiler.cmake:25 (message):\n"
                      "  Could not find compiler set in environment variable CUDACXX:\n\n  /usr/local/cuda/bin/nvcc."),
    ("device_assert", "RuntimeError: CUDA error: device-side assert triggered\nCUDA kernel errors might be "
                      "asynchronously reported at some other API call, so the stacktrace below might be incorrect.\n"
                      "For debugging consider passing CUDA_LAUNCH_BLOCKING=1."),
    ("device_assert", "../aten/src/ATen/native/cuda/IndexKernel.cu:92: operator(): block: [0,0,0], thread: [0,0,0] "
                      "Assertion `-sizes[i] <= index && index < sizes[i] && \"index out of bounds\"` failed.\n"
                      "torch.AcceleratorError: CUDA error: device-side assert triggered"),
]


def explained(host, text, env=None):
    proc = host.run("explain", text, "--json", env=env, timeout=300)
    assert proc.stdout.strip(), proc.stderr
    return json.loads(proc.stdout)


def checks_of(result, rule):
    [match] = [m for m in result["matches"] if m["id"] == rule]
    return {c["id"]: c for c in match["checks"]}


def piped(host, data, *args, env=None):
    return subprocess.run([CUDASWITCH, "explain", *args], input=data, capture_output=True, timeout=300,
                          env={**host.env, **(env or {})})


@pytest.mark.parametrize("expected,text", MESSAGES, ids=["%s-%d" % (m[0], i) for i, m in enumerate(MESSAGES)])
def test_known_message(host, expected, text):
    """An empty host root: each wording is known and its cause checked here (ok, error or a
    `cannot check` info; never nothing)."""
    result = explained(host, text)
    assert result["known"] and result["matches"][0]["id"] == expected, [m["id"] for m in result["matches"]]
    assert result["matches"][0]["checks"]


def test_a_missing_cudnn_is_not_a_missing_cudart(host):
    """torch 2.x wheels without nvidia-cudnn-cu12 (a partial `pip install --no-deps`)."""
    result = explained(host, "OSError: libcudnn.so.9: cannot open shared object file: No such file or directory")
    assert [m["id"] for m in result["matches"]] == ["cudnn_missing"]
    [check] = result["matches"][0]["checks"]
    assert check["facts"]["library"] == "libcudnn.so.9"


def test_the_missing_library_is_the_one_that_could_not_be_opened(host):
    """The dlopen error names the loading library first: the missing one is libnccl.so.2."""
    result = explained(host, "OSError: /venv/lib/python3.11/site-packages/torch/lib/libtorch_global_deps.so: "
                             "libnccl.so.2: cannot open shared object file: No such file or directory")
    assert checks_of(result, "nccl_missing")["env.loader_path"]["facts"]["library"] == "libnccl.so.2"


def nccl_install(host, where, version):
    """libnccl.so.2 -> libnccl.so.VERSION, as the libnccl2 package lays it out."""
    lib = host.path(where)
    lib.mkdir(parents=True, exist_ok=True)
    (lib / ("libnccl.so." + version)).write_bytes(b"\x7fELF")
    os.symlink("libnccl.so." + version, lib / "libnccl.so.2")
    return lib


def test_a_foreign_nccl_before_torchs_own(host):
    """An NGC-style image whose libnccl2 2.15.5 sits in /opt/ngc/lib, put on LD_LIBRARY_PATH by a
    Dockerfile, and a Horovod-era LD_PRELOAD of an older NCCL; then both gone. (Not the image's
    /usr/lib/x86_64-linux-gnu: the test's own cudaswitch process loads with this LD_LIBRARY_PATH,
    and a distribution's libpython there would replace its interpreter's own.)"""
    nccl_install(host, "/opt/ngc/lib", "2.15.5")
    old = nccl_install(host, "/opt/nccl-2.7.8/lib", "2.7.8")
    text = "ImportError: /usr/lib/python3/dist-packages/torch/lib/libtorch_cuda.so: undefined symbol: ncclRecv"
    env = {"LD_LIBRARY_PATH": "/opt/ngc/lib", "LD_PRELOAD": str(old / "libnccl.so.2")}
    foreign = checks_of(explained(host, text, env), "nccl_symbol")["nccl.foreign"]
    assert foreign["level"] == "error" and "2.15.5" in foreign["message"] and "2.7.8" in foreign["message"]
    assert "LD_PRELOAD" in foreign["message"] and "LD_LIBRARY_PATH" in foreign["message"]
    assert "use the NCCL PyTorch ships" in foreign["hint"]
    clean = checks_of(explained(host, text, {"LD_LIBRARY_PATH": "", "LD_PRELOAD": ""}), "nccl_symbol")["nccl.foreign"]
    assert clean["level"] == "ok" and "no libnccl on LD_PRELOAD or LD_LIBRARY_PATH" in clean["message"]


def test_nccl_interfaces(host):
    """A node with eno1, lo and docker0 where NCCL_SOCKET_IFNAME=eth2 was copied from another
    cluster's job script; then unset (NCCL takes eno1); then a root without /sys."""
    text = "torch.distributed.DistBackendError: ... store->get('0') got error: Socket Timeout"
    result = explained(host, text)
    assert checks_of(result, "nccl_network")["nccl.interface"]["level"] == "info"
    assert "cannot check network interfaces" in checks_of(result, "nccl_network")["nccl.interface"]["message"]
    for name in ("lo", "eno1", "docker0"):
        host.path("/sys/class/net/" + name).mkdir(parents=True)
    wrong = checks_of(explained(host, text, {"NCCL_SOCKET_IFNAME": "eth2"}), "nccl_network")["nccl.interface"]
    assert wrong["level"] == "error" and "eth2" in wrong["message"] and "eno1" in wrong["message"]
    assert "NCCL_DEBUG=INFO" in wrong["hint"]
    fine = checks_of(explained(host, text), "nccl_network")["nccl.interface"]
    assert fine["level"] == "ok" and fine["facts"]["usable"] == ["eno1"]


def test_cudnn_sublibraries_of_two_versions(host):
    """pytorch issue 185512's host: torch's cuDNN 9.20 set lacks libcudnn_engines_tensor_ir, which
    the loader then finds in the system cuDNN 9.22 in /lib/x86_64-linux-gnu; then the system copy removed."""
    wheel = host.path("/venv/lib/python3.11/site-packages/nvidia/cudnn/lib")
    system = host.path("/lib/x86_64-linux-gnu")
    for directory, names in ((wheel, ("libcudnn", "libcudnn_graph")), (system, ("libcudnn_engines_tensor_ir",))):
        directory.mkdir(parents=True)
        for name in names:
            version = "9.20.0" if directory == wheel else "9.22.0"
            (directory / ("%s.so.%s" % (name, version))).write_bytes(b"\x7fELF")
            os.symlink("%s.so.%s" % (name, version), directory / ("%s.so.9" % name))
    text = "RuntimeError: cuDNN error: CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH"
    env = {"LD_LIBRARY_PATH": str(wheel)}
    mixed = checks_of(explained(host, text, env), "cudnn_sublibrary_mismatch")["cudnn.sublibraries"]
    assert mixed["level"] == "error" and mixed["facts"]["versions"] == ["9.20.0", "9.22.0"]
    assert "libcudnn_engines_tensor_ir.so.9 9.22.0" in mixed["message"]
    for path in system.iterdir():
        path.unlink()
    one = checks_of(explained(host, text, env), "cudnn_sublibrary_mismatch")["cudnn.sublibraries"]
    assert one["level"] == "ok" and "9.20.0" in one["message"]


def test_libcuda_is_the_drivers(host):
    """A CPU-only cloud VM with a toolkit's stubs/ on LD_LIBRARY_PATH (no driver): confirmed; then a
    GKE-style node whose driver lives in /usr/local/nvidia/lib64, named by ld.so.conf.d: refuted."""
    stubs = host.path("/usr/local/cuda-12.4/lib64/stubs")
    stubs.mkdir(parents=True)
    (stubs / "libcuda.so").write_bytes(b"\x7fELF")
    text = "ImportError: libcuda.so.1: cannot open shared object file: No such file or directory"
    missing = checks_of(explained(host, text, {"LD_LIBRARY_PATH": str(stubs)}), "libcuda_missing")
    assert missing["driver.libcuda_found"]["level"] == "error"
    assert "stubs" in missing["driver.libcuda_found"]["message"] and "driver" in missing["driver.libcuda_found"]["hint"]
    driver = host.path("/usr/local/nvidia/lib64")
    driver.mkdir(parents=True)
    (driver / "libcuda.so.1").write_bytes(b"\x7fELF")
    host.path("/etc/ld.so.conf.d").mkdir(parents=True)
    host.path("/etc/ld.so.conf").write_text("include /etc/ld.so.conf.d/*.conf\n")
    host.path("/etc/ld.so.conf.d/nvidia.conf").write_text("/usr/local/nvidia/lib64\n")
    found = checks_of(explained(host, text), "libcuda_missing")["driver.libcuda_found"]
    assert found["level"] == "ok" and str(driver / "libcuda.so.1") in found["message"]


def test_no_torch_names_the_interpreter_and_envs_that_have_it(host):
    """A workstation where torch went into a conda env (listed in ~/.conda/environments.txt) but the
    script runs the first python3 on PATH, which has none."""
    env_prefix = "/home/tester/miniconda3/envs/ml"
    site = host.path(env_prefix + "/lib/python3.11/site-packages/torch")
    site.mkdir(parents=True)
    (site / "__init__.py").write_text("")
    host.path("/home/tester/.conda").mkdir(parents=True)
    host.path("/home/tester/.conda/environments.txt").write_text(env_prefix + "\n")
    check = checks_of(explained(host, "ModuleNotFoundError: No module named 'torch'"),
                      "torch_not_installed")["env.python_torch"]
    assert check["level"] == "error" and "python3 on PATH is " in check["message"]
    assert check["facts"]["python"] and check["facts"]["python"] in check["message"]
    assert check["facts"]["envs_with_torch"] == [env_prefix] and env_prefix in check["hint"]


def test_no_module_named_torch_submodule_is_not_this(host):
    """`No module named 'torch._C'` (running from a source checkout) and torchvision are other problems."""
    assert explained(host, "No module named 'torch'")["matches"][0]["id"] == "torch_not_installed"
    for text in ("ModuleNotFoundError: No module named 'torch._C'",
                 "ModuleNotFoundError: No module named 'torchvision'"):
        assert "torch_not_installed" not in [m["id"] for m in explained(host, text)["matches"]]


def test_cmake_finds_no_nvcc(host):
    """A fresh box with CUDA 13.1 installed under /usr/local but never put on PATH; a CUDACXX left
    pointing at a removed toolkit; then the shell after `cudaswitch use 13.1`."""
    from tests import kits

    kits.install_classic(kits.cuda13("13.1"), host.path("/usr/local/cuda-13.1"), "13.1")
    text = "CMake Error at CMakeLists.txt:3 (project):\n  No CMAKE_CUDA_COMPILER could be found."
    bare = checks_of(explained(host, text, {"PATH": "/usr/bin:/bin"}), "cmake_no_nvcc")["env.cmake_cuda"]
    assert bare["level"] == "error" and "13.1" in bare["message"] and "cudaswitch use 13.1" in bare["hint"]
    stale = checks_of(explained(host, text, {"CUDACXX": "/usr/local/cuda-11.8/bin/nvcc"}), "cmake_no_nvcc")
    assert stale["env.cmake_cuda"]["level"] == "error" and "not an executable" in stale["env.cmake_cuda"]["message"]
    switched = json.loads(host.run("use", "13.1", "--shell", "json", "--no-verify", check=True).stdout)["set"]
    done = checks_of(explained(host, text, switched), "cmake_no_nvcc")["env.cmake_cuda"]
    assert done["level"] == "ok" and "CMakeCache.txt" in done["message"]


def test_device_assert_is_not_the_setup(host):
    """A classifier whose labels run 1..N instead of 0..N-1: torch's IndexKernel assertion."""
    text = MESSAGES[[m[0] for m in MESSAGES].index("device_assert") + 1][1]
    check = checks_of(explained(host, text), "device_assert")["env.launch_blocking"]
    assert check["level"] == "info" and "not a setup problem" in check["message"]
    assert "index out of range" in check["message"] and "CUDA_LAUNCH_BLOCKING=1" in check["hint"]
    blocking = checks_of(explained(host, text, {"CUDA_LAUNCH_BLOCKING": "1"}), "device_assert")["env.launch_blocking"]
    assert "points at the failing kernel" in blocking["message"]


def test_cuda_integer_versions_are_decoded(host):
    result = explained(host, "RuntimeError: The NVIDIA driver on your system is too old (found version 11040).")
    assert result["versions"] == [{"value": "11040", "cuda": "11.4"}]
    result = explained(host, "CUDA driver version is insufficient for CUDA runtime version (driver 12020, "
                             "runtime version 12080)")
    assert [v["cuda"] for v in result["versions"]] == ["12.2", "12.8"]
    cudnn = explained(host, "RuntimeError: cuDNN version incompatibility: PyTorch was compiled against 8005 but "
                            "linked against 90100; NCCL version 21701")
    assert cudnn["versions"] == []
    human = host.run("explain", "RuntimeError: The NVIDIA driver on your system is too old (found version 12080).")
    assert "12080 is CUDA 12.8" in human.stdout


TRACEBACK = ("/venv/lib/python3.11/site-packages/torch/cuda/__init__.py:129: UserWarning: CUDA initialization: "
             "CUDA driver initialization failed, you might not have a CUDA gpu.\n"
             "Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n"
             "OSError: libcudnn.so.9: cannot open shared object file: No such file or directory\n")


@pytest.mark.parametrize("args", [(), ("-",)], ids=["no-argument", "dash"])
def test_a_traceback_piped_in(host, args):
    """`python train.py 2>&1 | cudaswitch explain [-]`: each distinct cause, the last error first."""
    proc = piped(host, TRACEBACK.encode(), *args, "--json")
    result = json.loads(proc.stdout)
    assert proc.returncode == 0 and [m["id"] for m in result["matches"]] == ["cudnn_missing", "cuda_not_available"]
    assert "last error" in result["message"]


def test_a_long_log_keeps_its_end(host):
    """A training log of several MiB whose final line is the error: read, bounded, to its end."""
    log = b"step 1 loss 0.5\n" * (3 << 16) + b"ModuleNotFoundError: No module named 'torch'\n"
    proc = piped(host, log, "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["matches"][0]["id"] == "torch_not_installed"
    assert b"last 1024 KiB" in proc.stderr


def test_a_terminal_on_stdin_is_usage_not_a_hang(host):
    leader, follower = pty.openpty()
    try:
        proc = subprocess.run([CUDASWITCH, "explain"], stdin=follower, capture_output=True, text=True, timeout=60,
                              env=host.env)
    finally:
        os.close(leader)
        os.close(follower)
    assert proc.returncode == 2 and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1 and "| cudaswitch explain" in proc.stderr


def test_empty_stdin_is_one_line_and_nonzero(host):
    proc = piped(host, b"   \n")
    assert proc.returncode == 2 and proc.stdout == b"" and len(proc.stderr.strip().splitlines()) == 1
    assert b"pipe it in" in proc.stderr  # read, found empty: not "missing argument"
