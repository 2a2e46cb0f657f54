"""Ask the toolkit itself: does nvcc run, which GPUs can it target, does a one-kernel program build
(and, with a GPU, run). The build is remembered per toolkit identity (a later switch costs no
process); one that timed out is not: it says nothing about the toolkit."""

import os
import re

from cudaswitch import cache
from cudaswitch.verify.identity import cudaswitch_version, driver_identity, path_identity, toolkit_identity
from cudaswitch.verify.runner import run_bounded

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from cudaswitch.paths import Paths
    from cudaswitch.toolkit import AnyRecord, Env

ARCHS_FILE = "nvcc-archs.marshal"
BUILDS_FILE = "builds.marshal"
BUILD_TIMEOUT = 120.0
CANNOT_FIND = re.compile(r"(?:cannot|unable to) find (?:library )?(-l[\w+.-]+)")  # GNU ld, gold, lld
NVCC_ERROR = re.compile(r"(#error.*|nvcc fatal.*|error:.*|undefined reference.*|cannot find -l.*|not found.*)")

SMOKE_SOURCE = r"""
#include <cstdio>
__global__ void add_one(int *x) { x[threadIdx.x] += 1; }
int main() {
    int *d = nullptr, h[32] = {0};
    if (cudaMalloc(&d, sizeof h) != cudaSuccess) { std::puts("cudaMalloc failed"); return 2; }
    cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
    add_one<<<1, 32>>>(d);
    cudaError_t err = cudaDeviceSynchronize();
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    std::printf("%s %d\n", cudaGetErrorString(err), h[31]);
    return err == cudaSuccess && h[31] == 1 ? 0 : 1;
}
"""


def gpu_archs(nvcc: str, env: "Env", timeout: float) -> "list[str] | None":
    """['compute_75', ...] from `nvcc --list-gpu-arch` (11.x+), or None when nvcc cannot say."""
    code, out, _ = run_bounded([nvcc, "--list-gpu-arch"], env, timeout)
    archs = re.findall(r"compute_\w+", out.decode("utf-8", "replace"))
    return archs if code == 0 and archs else None


def cached_gpu_archs(cache_dir: str, nvcc: str, env: "Env", timeout: float) -> "list[str] | None":
    """gpu_archs, remembered per nvcc binary (its path and safeio.file_identity): `torch` asks on
    every run, and nvcc's answer changes only with nvcc. A timed-out or failed probe is not kept."""
    archs, _ = cache.remembered(cache_dir, ARCHS_FILE, repr(path_identity(nvcc)), lambda: gpu_archs(nvcc, env, timeout),
                                keep=bool)
    return archs if isinstance(archs, list) else None


def first_error_line(text: str) -> "str | None":
    """nvcc's own error line (e.g. `#error -- unsupported GNU version! ...`) from its output."""
    for line in text.splitlines():
        match = NVCC_ERROR.search(line)
        if match:
            return line.strip()
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    return lines[-1] if lines else None


def cached_build(paths: "Paths", record: "AnyRecord", env: "Env", run: bool, fresh: bool = False,
                 timeout: float = BUILD_TIMEOUT, gpus: "Sequence[object]" = ()) -> dict:
    """compile_smoke's result, "cached": True when from an earlier build. A build that ran is also keyed
    by the driver and GPUs: after a driver upgrade an old "fails on the GPU" says nothing."""
    ran_on = (driver_identity(paths, env), tuple(sorted(repr(g) for g in gpus))) if run else None
    key = repr((cudaswitch_version(), record["root"], toolkit_identity(record, env), bool(run), ran_on))
    result, cached = cache.remembered(paths.cache_dir, BUILDS_FILE, key, lambda: compile_smoke(
        record, env, run, timeout), keep=lambda built: not built.get("timed_out"), fresh=fresh)
    return dict(result, cached=cached)


def compile_smoke(record: "AnyRecord", env: "Env", run: bool, timeout: float) -> dict:
    """Build the one-kernel program as a plain `nvcc x.cu -o x` does (static libcudart, libcudadevrt) and
    run it when `run`. "cannot_find": the libraries a failed link lacked."""
    nvcc = record.get("nvcc")
    if not nvcc:
        return {"built": False, "error": "this toolkit has no nvcc"}
    import tempfile  # ~7 ms (shutil, random): only for a build, not for the cached arch list

    with tempfile.TemporaryDirectory(prefix="cudaswitch-smoke-") as tmp:
        with open(os.path.join(tmp, "smoke.cu"), "w") as handle:
            handle.write(SMOKE_SOURCE)
        steps = [[nvcc, "-c", "smoke.cu", "-o", "smoke.o"], [nvcc, "smoke.o", "-o", "smoke"]]
        for argv in steps:
            result = _run(argv, env, timeout, tmp)
            command = " ".join(["nvcc"] + argv[1:])
            if not result["ok"]:
                return {"built": False, "error": first_error_line(result["output"]) or result["output"],
                        "command": command, "timed_out": result.get("timed_out", False),
                        "cannot_find": sorted(set(CANNOT_FIND.findall(result["output"])))}
        done = {"built": True, "ran": False, "command": "; ".join(" ".join(["nvcc"] + a[1:]) for a in steps)}
        if run:
            ran = _run([os.path.join(tmp, "smoke")], env, timeout, tmp)
            done.update(ran=True, run_ok=ran["ok"], run_output=ran["output"].strip()[-300:])
        return done


def _run(argv: "list[str]", env: "Env", timeout: float, cwd: str) -> dict:
    code, out, err = run_bounded(argv, env, timeout, cwd)
    if code is None:
        return {"ok": False, "output": err, "timed_out": "did not answer" in err}
    return {"ok": code == 0, "output": (out + err).decode("utf-8", "replace")}
