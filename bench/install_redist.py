"""python -m bench.install_redist [--cudaswitch PATH]

`cudaswitch install 13.1 --mirror URL` against its anchor on the same local mirror, one run each:
the anchor is what a user does by hand — `curl -o` every archive the install fetches, then
`tar -xJf` each. The mirror is tests/redist_mirror.py's (CUDA 13.1.2 in NVIDIA's redist scheme,
from the real wheel files), served over HTTP on 127.0.0.1 by this process.

cudaswitch does more than the anchor: it checks size and sha256, merges the trees, and builds a
one-kernel program (the first compile); that last step is timed on its own too, so the figure says
where the time goes. Writes bench/out/install-redist-latest.json."""

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests import redist_mirror  # noqa: E402  (the mirror the tests serve)

OUT = ROOT / "bench" / "out"
TIMEOUT = 1800


CPU = {"anchor": 0.0, "install": 0.0}


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(argv, env=None, cwd=None, side="anchor"):
    """Wall seconds of one command; its CPU seconds (user + sys, children included) add to CPU[side],
    a figure other processes on a loaded machine disturb far less than wall time."""
    started, cpu = time.perf_counter(), children_cpu()
    subprocess.run(argv, env=env, cwd=cwd, check=True, timeout=TIMEOUT, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    CPU[side] += children_cpu() - cpu
    return time.perf_counter() - started


def archives(mirror_root):
    manifest = json.loads((mirror_root / "compute/cuda/redist/redistrib_13.1.2.json").read_text())
    return [manifest[k]["linux-x86_64"]["relative_path"] for k in
            ("cuda_nvcc", "cuda_cudart", "cuda_crt", "libnvvm", "cuda_cccl")]


def anchor(url, paths, work):
    """curl each archive, then tar -xJf each: seconds."""
    work.mkdir()
    started = time.perf_counter()
    for rel in paths:
        run(["curl", "-sSf", "-o", str(work / os.path.basename(rel)), url + rel])
    for rel in paths:
        run(["tar", "-xJf", os.path.basename(rel)], cwd=work)
    return time.perf_counter() - started


def install(cudaswitch, url, work):
    env = dict(os.environ, CUDASWITCH_DATA_DIR=str(work / "data"), CUDASWITCH_CACHE_DIR=str(work / "cache"),
               CUDASWITCH_CONFIG_DIR=str(work / "config"), CUDASWITCH_ROOT=str(work))
    return run([cudaswitch, "install", "13.1", "--mirror", url], env=env, side="install"), work / "data/toolkits/13.1.2"


def first_compile(tree):
    from cudaswitch.install import redist_tree

    started, cpu = time.perf_counter(), children_cpu()
    env, _ = redist_tree.compile_env(str(tree), dict(os.environ), tempfile.mkdtemp(prefix="bench-cc-cache-"))
    error = redist_tree.first_compile(str(tree), env)
    if error:
        raise SystemExit("first compile failed: " + error)
    CPU["first_compile"] = children_cpu() - cpu
    return time.perf_counter() - started


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cudaswitch", default=shutil.which("cudaswitch"))
    args = parser.parse_args()
    mirror_root = redist_mirror.mirror()
    served = redist_mirror.Mirror(mirror_root)
    work = Path(tempfile.mkdtemp(prefix="bench-install-redist-"))
    try:
        paths = archives(mirror_root)
        by_hand = anchor(served.url, paths, work / "anchor")
        ours, tree = install(args.cudaswitch, served.url, work / "install")
        compile_s = first_compile(tree)
    finally:
        served.close()
    result = {"anchor_s": round(by_hand, 2), "install_s": round(ours, 2), "ratio": round(ours / by_hand, 2),
              "first_compile_s": round(compile_s, 2),
              "ratio_without_first_compile": round((ours - compile_s) / by_hand, 2),
              "anchor_cpu_s": round(CPU["anchor"], 2), "install_cpu_s": round(CPU["install"], 2),
              "first_compile_cpu_s": round(CPU["first_compile"], 2),
              "archives": paths, "cpus": os.cpu_count(), "load": os.getloadavg()}
    shutil.rmtree(work, ignore_errors=True)
    OUT.mkdir(exist_ok=True)
    (OUT / "install-redist-latest.json").write_text(json.dumps(result, indent=2) + "\n")
    print("anchor (curl + tar -xJf): %.1f s" % by_hand)
    print("cudaswitch install:       %.1f s  (%.2f x the anchor; budget 1.2 x)" % (ours, result["ratio"]))
    print("  of which first compile: %.1f s  (%.2f x without it)" % (compile_s, result["ratio_without_first_compile"]))
    print("CPU seconds (user+sys): anchor %.1f, install %.1f (%.2f x), of which first compile %.1f" % (
        CPU["anchor"], CPU["install"], CPU["install"] / CPU["anchor"], CPU["first_compile"]))
    print("load average: %.1f %.1f %.1f on %d CPUs" % (*result["load"], result["cpus"]))


if __name__ == "__main__":
    main()
