"""What a toolkit root says about itself: version files, nvcc, library sonames. Running nvcc is the
only subprocess; its answer is cached by the binary's identity, failures included."""

import glob
import json
import os
import re
import signal

from cudaswitch.safeio import Unreadable, identity_text, read_or_none, read_regular
from cudaswitch.toolkit import version_tuple

NVCC_RELEASE = re.compile(r"release (\d+\.\d+), V(\d+\.\d+\.\d+)")
DIST_INFO = re.compile(r"nvidia_cuda_(?:nvcc|runtime)(_cu\d+)?-((\d+)\.\d+\.\d+)[^/]*\.dist-info$")
CUDART_SONAME = re.compile(r"libcudart\.so\.(\d+(?:\.\d+){1,2})$")
DATE_STAMP_MINOR = 10000  # version.json "cuda" of 11.8 may read 11.8.20220929: not a patch level


def read_version_json(root: str) -> "tuple[str | None, dict, str | None]":
    """(version, components, problem) from version.json; version None when absent or unusable."""
    path = os.path.join(root, "version.json")
    try:
        data = json.loads(read_regular(path, 1 << 20))
    except FileNotFoundError:
        return None, {}, None
    except (OSError, Unreadable, ValueError, RecursionError) as exc:
        why = (str(exc).splitlines() or [type(exc).__name__])[0]
        return None, {}, "version.json is unreadable or not JSON (%s)" % why
    if not isinstance(data, dict):
        return None, {}, "version.json is not a JSON object"
    components = {key: value["version"] for key, value in data.items()
                  if isinstance(value, dict) and isinstance(value.get("version"), str)}
    for key in ("cuda_nvcc", "cuda_cudart"):
        if key in components:
            return components[key], components, None
    sdk = components.get("cuda", "")
    pieces = sdk.split(".")
    if len(pieces) == 3 and pieces[2].isascii() and pieces[2].isdigit() and int(pieces[2][:9]) >= DATE_STAMP_MINOR:
        sdk = ".".join(pieces[:2])
    return sdk or None, components, None


def read_version_txt(root: str) -> "str | None":
    text = (read_or_none(os.path.join(root, "version.txt"), 4096) or b"").decode("utf-8", "replace")
    match = re.search(r"CUDA Version (\d+(?:\.\d+){1,2})", text)
    return match.group(1) if match else None


def read_dist_info(root: str) -> "str | None":
    """A root made of NVIDIA wheels keeps their dist-info in site-packages, beside nvidia/ (CUDA 13's
    nvidia/cu13 one level higher): the nvcc wheel's version is nvcc's; without one (torch's runtime
    wheels), the cuda-runtime wheel's. Only a wheel of the root's own kind: for nvidia/cuNN one of
    major NN; beside the split nvidia/ of CUDA 11 and 12 one named _cuNN (CUDA 13's unsuffixed
    wheels install into nvidia/cu13, another root of the same site)."""
    parent = os.path.dirname(root)
    dirs = [(parent, False), (root, True), (os.path.join(root, "dist-info"), True)]
    dirs += [(os.path.dirname(parent), False)] if os.path.basename(parent) == "nvidia" else []
    major = re.fullmatch(r"cu(\d+)", os.path.basename(root))
    for wheel in ("nvcc", "runtime"):
        for directory, inside in dirs:
            for path in sorted(glob.glob(os.path.join(glob.escape(directory), "nvidia_cuda_%s*.dist-info" % wheel))):
                match = DIST_INFO.search(path)
                if match and (match.group(3) == major.group(1) if major else inside or match.group(1)):
                    return match.group(2)
    return None


def cudart_version(lib_dirs: "list[str]") -> "str | None":
    """Newest libcudart soname version in the given dirs: 'libcudart.so.12.4.127' -> '12.4.127'."""
    best = None
    for directory in lib_dirs:
        for path in glob.glob(os.path.join(directory, "libcudart.so.*")):
            match = CUDART_SONAME.search(os.path.basename(path))
            if match and (best is None or version_tuple(match.group(1)) > version_tuple(best)):
                best = match.group(1)
    return best


def run_nvcc(nvcc: str, timeout: float) -> "dict[str, str]":
    """{'version': 'x.y.z'} or {'error': one line}; never raises, never waits past `timeout`."""
    from cudaswitch.run import run

    result = run([nvcc, "--version"], timeout=timeout)
    if result.timed_out:
        return {"error": "nvcc did not answer within %g s" % timeout}
    if result.returncode is None:
        return {"error": "nvcc cannot run: " + result.error.split(": ", 1)[-1]}
    if result.returncode != 0:
        return {"error": "nvcc --version " + _exit_reason(result.returncode)}
    match = NVCC_RELEASE.search(result.stdout.decode("utf-8", "replace"))
    if not match:
        return {"error": "nvcc --version printed no release line"}
    return {"version": match.group(2)}


def nvcc_key(nvcc: str) -> str:
    """What an nvcc probe result depends on: the binary's identity (OSError when it cannot be read)."""
    return identity_text(nvcc)


def _exit_reason(code: int) -> str:
    if code < 0 or code > 128:
        number = -code if code < 0 else code - 128
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = "signal %d" % number
        return "exited with %d (%s)" % (code if code > 0 else 128 + number, name)
    return "exited with %d" % code

