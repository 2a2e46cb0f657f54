"""The machine's own answers, asked without cudaswitch: the driver from each source (libcuda,
NVML, /proc/driver/nvidia/version, nvidia-smi) and what torch does on the GPU. check.sh compares
cudaswitch's verdicts with these. Standard library only, plus torch (in a child with a timeout).

Usage: python3 facts.py drivers|torch  -> JSON on stdout
"""

import ctypes
import json
import re
import subprocess
import sys

TIMEOUT = 120
PROC_VERSION = "/proc/driver/nvidia/version"


def libcuda():
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        return {"error": str(exc)}
    version = ctypes.c_int(0)
    out = {"version_rc": lib.cuDriverGetVersion(ctypes.byref(version)), "cuda_int": version.value,
           "init_rc": lib.cuInit(0), "gpus": []}
    count = ctypes.c_int(0)
    if out["init_rc"] == 0 and lib.cuDeviceGetCount(ctypes.byref(count)) == 0:
        for index in range(count.value):
            name = ctypes.create_string_buffer(256)
            major, minor = ctypes.c_int(0), ctypes.c_int(0)
            lib.cuDeviceGetName(name, 256, index)
            lib.cuDeviceGetAttribute(ctypes.byref(major), 75, index)  # COMPUTE_CAPABILITY_MAJOR
            lib.cuDeviceGetAttribute(ctypes.byref(minor), 76, index)  # COMPUTE_CAPABILITY_MINOR
            out["gpus"].append({"index": index, "name": name.value.decode("utf-8", "replace"),
                                "capability": "%d.%d" % (major.value, minor.value)})
    out["cuda"] = "%d.%d" % (version.value // 1000, (version.value % 1000) // 10) if version.value else None
    return out


def nvml():
    try:
        lib = ctypes.CDLL("libnvidia-ml.so.1")
    except OSError as exc:
        return {"error": str(exc)}
    rc = lib.nvmlInit_v2()
    if rc != 0:
        return {"error": "nvmlInit_v2 returned %d" % rc}
    release = ctypes.create_string_buffer(96)
    cuda = ctypes.c_int(0)
    count = ctypes.c_uint(0)
    out = {"release_rc": lib.nvmlSystemGetDriverVersion(release, 96),
           "cuda_rc": lib.nvmlSystemGetCudaDriverVersion_v2(ctypes.byref(cuda)),
           "count_rc": lib.nvmlDeviceGetCount_v2(ctypes.byref(count))}
    out["release"] = release.value.decode() or None
    out["cuda_int"] = cuda.value
    out["cuda"] = "%d.%d" % (cuda.value // 1000, (cuda.value % 1000) // 10) if cuda.value else None
    out["gpu_count"] = count.value
    return out


def proc():
    try:
        with open(PROC_VERSION, encoding="utf-8", errors="replace") as handle:
            first = handle.readline().strip()
    except OSError as exc:
        return {"error": str(exc)}
    match = re.search(r"Kernel Module(?: for \S+)?\s+(\d+\.\d+(?:\.\d+)?)", first)
    return {"line": first, "release": match.group(1) if match else None}


def nvidia_smi():
    try:
        query = subprocess.run(["nvidia-smi", "--query-gpu=index,name,compute_cap,driver_version",
                                "--format=csv,noheader"], capture_output=True, text=True, timeout=TIMEOUT)
        banner = subprocess.run(["nvidia-smi"], capture_output=True, text=True, timeout=TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"error": str(exc)}
    gpus = []
    for line in query.stdout.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) == 4 and cells[0].isdigit():
            gpus.append({"index": int(cells[0]), "name": cells[1], "capability": cells[2], "release": cells[3]})
    cuda = re.search(r"CUDA Version:\s*(\d+\.\d+)", banner.stdout)
    return {"rc": query.returncode, "gpus": gpus, "release": gpus[0]["release"] if gpus else None,
            "cuda": cuda.group(1) if cuda else None}


TORCH = r"""
import json, torch
out = {"version": torch.__version__, "cuda": torch.version.cuda, "available": torch.cuda.is_available()}
if out["available"]:
    out["arch_list"] = torch.cuda.get_arch_list()
    major, minor = torch.cuda.get_device_capability(0)
    out["capability"] = "%d.%d" % (major, minor)
    out["sm"] = "sm_%d%d" % (major, minor)
    out["device"] = torch.cuda.get_device_name(0)
    a = torch.arange(256, dtype=torch.float32).reshape(16, 16) / 256
    gpu = (a.cuda() @ a.cuda()).cpu()
    out["matmul_ok"] = bool(torch.allclose(gpu, a @ a, rtol=1e-3, atol=1e-3))
    out["matmul_sum"] = float(gpu.sum())
print(json.dumps(out))
"""


def torch_facts(python):
    try:
        proc_ = subprocess.run([python, "-c", TORCH], capture_output=True, text=True, timeout=TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"error": str(exc)}
    if proc_.returncode != 0:
        return {"error": (proc_.stderr.strip().splitlines() or ["exit %d" % proc_.returncode])[-1]}
    return json.loads(proc_.stdout)


def main(argv):
    if argv[:1] == ["drivers"]:
        data = {}
        for name, ask in (("libcuda", libcuda), ("nvml", nvml), ("proc", proc), ("nvidia_smi", nvidia_smi)):
            try:
                data[name] = ask()
            except Exception as exc:  # a source that breaks is a fact to record, not a reason to stop
                data[name] = {"error": "%s: %s" % (type(exc).__name__, exc)}
    elif argv[:1] == ["torch"] and len(argv) == 2:
        data = torch_facts(argv[1])
    else:
        sys.stderr.write("usage: facts.py drivers | facts.py torch PYTHON\n")
        return 2
    print(json.dumps(data, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
