"""`explain` knows the error families of compat.toml, as different torch / CUDA
releases word them (older releases first), and says so when it does not know a message."""

import json

import pytest

MESSAGES = [
    # no kernel image: CUDA's own text (torch 1.x RuntimeError; torch 2.8+ AcceleratorError) and torch's warning
    ("no_kernel_image", "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
                        "CUDA kernel errors might be asynchronously reported at some other API call"),
    ("no_kernel_image", "torch.AcceleratorError: CUDA error: no kernel image is available for execution on the "
                        "device\nSearch for `cudaErrorNoKernelImageForDevice' in https://docs.nvidia.com/cuda/"),
    ("no_kernel_image", "UserWarning: NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with "
                        "the current PyTorch installation. The current PyTorch install supports CUDA capabilities "
                        "sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90."),
    # driver older than the runtime: CUDA runtime text, and torch's own check (1.x and 2.x)
    ("driver_too_old", "RuntimeError: CUDA error: CUDA driver version is insufficient for CUDA runtime version"),
    ("driver_too_old", "RuntimeError: The NVIDIA driver on your system is too old (found version 11040). Please "
                       "update your GPU driver by downloading and installing a new version from the URL: "
                       "http://www.nvidia.com/Download/index.aspx"),
    # cpp_extension's major check: torch 1.x wrapped the line; 2.x one line
    ("cuda_home_mismatch", "RuntimeError:\nThe detected CUDA version (11.8) mismatches the version that was used "
                           "to compile\nPyTorch (10.2). Please make sure to use the same CUDA versions."),
    ("cuda_home_mismatch", "RuntimeError: The detected CUDA version (12.4) mismatches the version that was used to "
                           "compile PyTorch (11.8). Please make sure to use the same CUDA versions."),
    # a runtime of that major missing from the loader path
    ("libcudart_missing", "OSError: libcudart.so.11.0: cannot open shared object file: No such file or directory"),
    ("libcudart_missing", "ImportError: libcudart.so.12: cannot open shared object file: No such file or directory"),
    # two cuDNN copies: cuDNN 8 symbol errors, torch 1.x and 2.x version checks
    ("cudnn_two_copies", "Could not load library libcudnn_cnn_infer.so.8. Error: /usr/lib/x86_64-linux-gnu/"
                         "libcudnn_cnn_infer.so.8: undefined symbol: _ZN11nvrtcHelpers17getLibnvrtcHandleEv, "
                         "version libcudnn_ops_infer.so.8"),
    ("cudnn_two_copies", "RuntimeError: cuDNN version incompatibility: PyTorch was compiled  against (8, 9, 2) but "
                         "found runtime version (8, 5, 0). PyTorch already comes bundled with cuDNN."),
    ("cudnn_two_copies", "RuntimeError: cuDNN version incompatibility: PyTorch was compiled against 8005 but "
                         "linked against 7605"),
    # NCCL: torch 1.x RuntimeError and 2.x DistBackendError
    ("nccl_system_error", "RuntimeError: NCCL error in: ../torch/lib/c10d/ProcessGroupNCCL.cpp:825, unhandled "
                          "system error, NCCL version 2.7.8"),
    ("nccl_system_error", "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
                          "ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for "
                          "details), NCCL version 2.20.5\nncclSystemError: System call (e.g. socket, malloc) failed."),
    # nvcc and an architecture it does not know (older and newer nvcc wording)
    ("nvcc_unsupported_arch", "nvcc fatal   : Unsupported gpu architecture 'compute_89'"),
    ("nvcc_unsupported_arch", "nvcc fatal   : Value 'sm_35' is not defined for option 'gpu-architecture'"),
    # host gcc above the ceiling: nvcc's #error, and torch's own bound check (CUDA 11.0-11.7)
    ("unsupported_gcc", "/usr/local/cuda-11.8/include/crt/host_config.h:132:2: error: #error -- unsupported GNU "
                        "version! gcc versions later than 11 are not supported! The nvcc flag "
                        "'-allow-unsupported-compiler' can be used to override this version check"),
    ("unsupported_gcc", "RuntimeError: The current installed version of g++ (12.2.0) is greater than the maximum "
                        "required version by CUDA 11.7 (11.0). Please make sure to use an adequate version of g++"),
    # torch.cuda.is_available() False: the plain observation, CPU build, torch 2.x warning
    ("cuda_not_available", "torch.cuda.is_available() returns False although nvidia-smi works"),
    ("cuda_not_available", "AssertionError: Torch not compiled with CUDA enabled"),
    ("cuda_not_available", "UserWarning: CUDA initialization: CUDA driver initialization failed, you might not "
                           "have a CUDA gpu."),
    # 803 / 804: the number, and the CUDA error strings (torch 1.x and 2.x init warnings)
    ("driver_mismatch_803", "CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda "
                            "functions before calling NumCudaDevices() that might have already set an error? "
                            "Error 803: system has unsupported display driver / cuda driver combination"),
    ("driver_mismatch_803", "cupy_backends.cuda.api.driver.CUDADriverError: CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: system "
                            "has unsupported display driver / cuda driver combination"),
    ("compat_unsupported_804", "RuntimeError: CUDA error: forward compatibility was attempted on non supported HW"),
    ("compat_unsupported_804", "UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). "
                               "Error 804: forward compatibility was attempted on non supported HW"),
    # cpp_extension without a toolkit, and DeepSpeed's op builder
    ("cuda_home_unset", "OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA install root."),
    ("cuda_home_unset", "deepspeed.ops.op_builder.builder.MissingCUDAException: CUDA_HOME does not exist, unable to "
                        "compile CUDA op(s)"),
    # torch's libcusparse wheel meeting an older libnvJitLink (12.1 toolkit on LD_LIBRARY_PATH; 12.4 wheels)
    ("nvjitlink_symbol", "ImportError: /venv/lib/python3.11/site-packages/torch/lib/../../nvidia/cusparse/lib/"
                         "libcusparse.so.12: undefined symbol: __nvJitLinkAddData_12_1, version libnvJitLink.so.12"),
    ("nvjitlink_symbol", "OSError: /opt/conda/lib/python3.10/site-packages/nvidia/cusparse/lib/libcusparse.so.12: "
                         "undefined symbol: __nvJitLinkComplete_12_4, version libnvJitLink.so.12"),
    # NVRTC's builtins: torch's JIT fuser and the dlopen error
    ("nvrtc_builtins_missing", "RuntimeError: nvrtc: error: failed to open libnvrtc-builtins.so.12.1.\n  Make sure "
                               "that libnvrtc-builtins.so.12.1 is installed correctly."),
    ("nvrtc_builtins_missing", "OSError: libnvrtc-builtins.so.11.8: cannot open shared object file: No such file or "
                               "directory"),
    ("cublas_init", "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`"),
    ("cublas_init", "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`"),
    ("cudart_link_missing", "/usr/bin/ld: cannot find -lcudart: No such file or directory\ncollect2: error: ld "
                            "returned 1 exit status"),
    ("cudart_link_missing", "ld.lld: error: unable to find library -lcudart"),
    # torch 2.x OutOfMemoryError and torch 1.x RuntimeError wording
    ("cuda_oom", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
                 "of 23.65 GiB of which 1.12 GiB is free."),
    ("cuda_oom", "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 7.79 GiB total capacity; "
                 "6.50 GiB already allocated; 10.56 MiB free; 6.60 GiB reserved in total by PyTorch)"),
    ("ptx_toolchain", "RuntimeError: CUDA error: the provided PTX was compiled with an unsupported toolchain."),
    ("ptx_toolchain", "cupy_backends.cuda.api.driver.CUDADriverError: CUDA_ERROR_UNSUPPORTED_PTX_VERSION: the "
                      "provided PTX was compiled with an unsupported toolchain."),
    # cuDNN 8's split libraries and cuDNN 9's loader, missing (not two copies)
    ("cudnn_missing", "Could not load library libcudnn_cnn_infer.so.8. Error: libcudnn_cnn_infer.so.8: cannot open "
                      "shared object file: No such file or directory"),
    ("cudnn_missing", "Unable to load any of {libcudnn_cnn.so.9.1.0, libcudnn_cnn.so.9.1, libcudnn_cnn.so.9, "
                      "libcudnn_cnn.so}"),
    # the driver layer: no kernel module (nvidia-smi; modprobe after a kernel update)
    ("driver_not_loaded", "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure "
                          "that the latest NVIDIA driver is installed and running."),
    ("driver_not_loaded", "modprobe: FATAL: Module nvidia not found in directory /lib/modules/6.8.0-49-generic"),
    ("nvml_version_mismatch", "Failed to initialize NVML: Driver/library version mismatch\n"
                              "NVML library version: 550.90"),
    ("nvml_version_mismatch", "NVRM: API mismatch: the client has the version 550.90.07, but this kernel module has "
                              "the version 550.54.15.  Please make sure that this kernel module and all NVIDIA driver "
                              "components have the same version."),
    ("device_busy", "RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable"),
    ("device_busy", "cupy_backends.cuda.api.runtime.CUDARuntimeError: cudaErrorDevicesUnavailable: CUDA-capable "
                    "device(s) is/are busy or unavailable"),
    ("no_device", "RuntimeError: cuda runtime error (100) : no CUDA-capable device is detected at "
                  "/pytorch/aten/src/THC/THCGeneral.cpp:47"),
    ("no_device", "CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected"),
    ("invalid_device_function", "RuntimeError: CUDA error: invalid device function"),
    ("invalid_device_function", "error: cudaErrorInvalidDeviceFunction from my_ext_kernel launch"),
]


@pytest.mark.parametrize("expected,text", MESSAGES, ids=["%s-%d" % (m[0], i) for i, m in enumerate(MESSAGES)])
def test_known_message(host, expected, text):
    proc = host.run("explain", text, "--json")
    result = json.loads(proc.stdout)
    assert proc.returncode == 0 and result["known"] is True
    assert result["matches"][0]["id"] == expected, [m["id"] for m in result["matches"]]
    first = result["matches"][0]
    assert first["cause"] and first["todo"]
    assert first["checks"], "each cause is confirmed or ruled out by at least one check on this host"


def test_every_section_9_row_is_covered():
    """Every rule has two real wordings here or in test_explain_layers (the layers around torch)."""
    from cudaswitch.verify import checkregistry, checkset, facttables as facts  # noqa: F401  (checkset fills the registry)
    from tests.test_explain_layers import MESSAGES as LAYER_MESSAGES

    every = MESSAGES + LAYER_MESSAGES
    assert {rule["id"] for rule in facts.error_rules(checkregistry.ids_for("explain"))} == {m[0] for m in every}
    counts = {}
    for rule_id, _ in every:
        counts[rule_id] = counts.get(rule_id, 0) + 1
    assert min(counts.values()) >= 2


def test_unknown_message_says_it_does_not_know(host):
    proc = host.run("explain", "Segmentation fault in my_kernel_launcher at frobnicate.cu:12", "--json")
    result = json.loads(proc.stdout)
    assert proc.returncode == 1 and result["known"] is False and result["matches"] == []
    assert "does not know this message" in result["message"]
    human = host.run("explain", "Segmentation fault in frobnicate")
    assert human.returncode == 1 and "does not know this message" in human.stdout


def test_cuda_home_unset_is_confirmed_or_refuted_here(host):
    """Confirmed with nothing that gives a CUDA_HOME (a bare PATH: mirrors a fresh cloud VM whose
    toolkit was never put on PATH); refuted once a toolkit is switched in."""
    from tests import kits

    text = "OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA install root."
    root = kits.install_classic(kits.cuda13("13.1"), host.path("/usr/local/cuda-13.1"), "13.1")
    bare = {"PATH": "/nonexistent-bin"}  # and no /usr/local/cuda under the host root
    proc = host.run("explain", text, "--json", env=bare)
    [confirmed] = [c for c in json.loads(proc.stdout)["matches"][0]["checks"] if c["id"] == "env.torch_cuda_home"]
    assert "finds no toolkit" in confirmed["message"] and "cudaswitch use 13.1" in confirmed["hint"]
    proc = host.run("explain", text, "--json", env={"CUDA_HOME": str(root)})
    [refuted] = [c for c in json.loads(proc.stdout)["matches"][0]["checks"] if c["id"] == "env.torch_cuda_home"]
    assert refuted["level"] == "ok" and str(root) in refuted["message"]


def test_cudart_link_is_checked_against_the_active_toolkit(host):
    from tests import kits

    root = kits.install_classic(kits.cuda13("13.1"), host.path("/usr/local/cuda-13.1"), "13.1")
    switched = json.loads(host.run("use", "13.1", "--shell", "json", "--no-verify", check=True).stdout)["set"]
    proc = host.run("explain", "/usr/bin/ld: cannot find -lcudart", "--json", env=switched)
    [item] = json.loads(proc.stdout)["matches"][0]["checks"]
    assert item["level"] == "ok" and "libcudart.so" in item["message"] and str(root) in item["message"]
    for lib in (root / "targets/x86_64-linux/lib").glob("libcudart*"):
        lib.unlink()  # hardlinks/links into the kit cache: the cache keeps its copies
    proc = host.run("explain", "/usr/bin/ld: cannot find -lcudart", "--json", env=switched)
    [item] = json.loads(proc.stdout)["matches"][0]["checks"]
    assert item["level"] == "error" and "cannot link" in item["message"]


def test_explain_confirms_on_this_host(host):
    """libcudart.so.12 missing: explain finds the 12.4 toolkit that has it and names it in the hint."""
    from tests import kits

    kits.install_classic_runtime12(host.path("/usr/local/cuda-12.4"))
    proc = host.run("explain", "ImportError: libcudart.so.12: cannot open shared object file", "--json")
    [check] = json.loads(proc.stdout)["matches"][0]["checks"]
    assert check["level"] == "warning" and "NOT on the loader path" in check["message"]
    assert check["facts"]["toolkits"] and check["facts"]["toolkits"][0].startswith("12.4")
    assert "cudaswitch use 12.4" in check["hint"]


@pytest.mark.parametrize("args", [["explain", "  "], ["verify", "--python", "/nonexistent/python"],
                                  ["doctor", "--timeout", "0"], ["verify", "99.9"]])
def test_bad_input_is_one_line_and_nonzero(host, args):
    proc = host.run(*args)
    assert proc.returncode != 0 and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1 and proc.stderr.startswith("cudaswitch: error:")
