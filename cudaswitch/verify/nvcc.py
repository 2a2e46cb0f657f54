"""Ask the toolkit itself: does nvcc run, which gcc does it accept, which GPUs can it target,
and does a one-kernel program build (and, with a GPU, run)."""

import glob
import os
import re
import tempfile

from cudaswitch.verify.runner import run_bounded, which

GCC_CEILING = re.compile(r"#if\s+__GNUC__\s*>\s*(\d+)")
NVCC_ERROR = re.compile(r"(#error.*|nvcc fatal.*|error:.*)")

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


def host_config_files(record):
    """crt/host_config.h candidates: classic include/, targets/<triple>/include/, wheel layouts."""
    root = record["root"]
    found = [os.path.join(root, "include", "crt", "host_config.h")]
    found += sorted(glob.glob(os.path.join(root, "targets", "*", "include", "crt", "host_config.h")))
    for lib in record.get("lib_dirs") or []:
        found.append(os.path.join(os.path.dirname(lib), "include", "crt", "host_config.h"))
    return [p for p in dict.fromkeys(found) if os.path.isfile(p)]


def gcc_ceiling_from_host(record):
    """(newest gcc major the toolkit accepts, file it says so in) or (None, None)."""
    for path in host_config_files(record):
        from cudaswitch.safeio import read_or_none

        data = read_or_none(path, 1 << 20)
        match = GCC_CEILING.search(data.decode("utf-8", "replace")) if data is not None else None
        if match:
            return int(match.group(1)), path
    return None, None


def host_compiler(env):
    """The host compiler nvcc would use: NVCC_CCBIN if set, else `gcc` on PATH."""
    chosen = env.get("NVCC_CCBIN")
    if chosen:
        return chosen if "/" in chosen else which(chosen, env)
    return which("gcc", env)


def compiler_version(compiler, env, timeout):
    """'12.2.0' from `gcc -dumpfullversion -dumpversion`, or None."""
    code, out, _ = run_bounded([compiler, "-dumpfullversion", "-dumpversion"], env, timeout)
    text = out.decode("utf-8", "replace").strip()
    return text if code == 0 and re.match(r"^\d+(\.\d+)*$", text) else None


def gpu_archs(nvcc, env, timeout):
    """['compute_75', ...] from `nvcc --list-gpu-arch` (11.x+), or None when nvcc cannot say."""
    code, out, _ = run_bounded([nvcc, "--list-gpu-arch"], env, timeout)
    archs = re.findall(r"compute_\w+", out.decode("utf-8", "replace"))
    return archs if code == 0 and archs else None


def first_error_line(text):
    """nvcc's own error line (e.g. `#error -- unsupported GNU version! ...`) from its output."""
    for line in text.splitlines():
        match = NVCC_ERROR.search(line)
        if match:
            return line.strip()
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    return lines[-1] if lines else None


def compile_smoke(record, env, run, timeout):
    """Build the one-kernel program; run it when `run` (a GPU is there). Returns a result dict."""
    nvcc = record.get("nvcc")
    if not nvcc:
        return {"built": False, "error": "this toolkit has no nvcc"}
    with tempfile.TemporaryDirectory(prefix="cudaswitch-smoke-") as tmp:
        source = os.path.join(tmp, "smoke.cu")
        with open(source, "w") as handle:
            handle.write(SMOKE_SOURCE)
        # Without a GPU, compiling to an object is enough to exercise host gcc and headers.
        output = os.path.join(tmp, "smoke" if run else "smoke.o")
        argv = [nvcc, source, "-o", output] + ([] if run else ["-c"])
        result = _run(argv, env, timeout, tmp)
        result["command"] = " ".join(argv[:1] + ["smoke.cu", "-o", os.path.basename(output)] + argv[4:])
        if not result["ok"]:
            return {"built": False, "error": first_error_line(result["output"]) or result["output"],
                    "command": result["command"]}
        if not run:
            return {"built": True, "ran": False, "command": result["command"]}
        ran = _run([output], env, timeout, tmp)
        return {"built": True, "ran": True, "run_ok": ran["ok"], "run_output": ran["output"].strip()[-300:],
                "command": result["command"]}


def _run(argv, env, timeout, cwd):
    code, out, err = run_bounded(argv, env, timeout, cwd)
    if code is None:
        return {"ok": False, "output": err}
    return {"ok": code == 0, "output": (out + err).decode("utf-8", "replace")}
