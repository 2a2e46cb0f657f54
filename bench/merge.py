"""python -m bench.merge [--reports N] [--rounds R] [--cudaswitch PATH] [--json]

`audit merge` at cluster scale: N generated node reports (default 10,000; each the shape and size
of a real `audit --json` of a node with CUDA 12.4, 12.8 and 13.0 and NCCL, 8 GPUs; a few nodes
drift: another driver, a missing toolkit), merged from a directory of files (`audit merge DIR
--json`, one line each as `audit --json` writes a file; DIR/*.json would pass the kernel's argument
limit at 100,000), from JSON lines on stdin (pdsh/clush), and with `--html`. Reports wall time, CPU
time and the peak RSS of the merge process (getrusage of the child), median of R rounds, beside the
floor: Python reading and json.loads-ing the same bytes, nothing else. JSON goes to
bench/out/merge-latest.json."""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

OUT = Path(__file__).resolve().parent / "out"
TOOLKITS = [("13.0.88", "ok", None), ("12.8.93", "ok", None), ("12.4.131", "incomplete", "2.21.5")]


def toolkit(version, status, nccl, node):
    root = "/usr/local/cuda-%s" % ".".join(version.split(".")[:2])
    components = {"cudart": version, "nvcc": version if status == "ok" else None, "cudnn": None, "nccl": nccl,
                  "cupti": None, "cublas": None}
    return {"version": version, "short": version.rsplit(".", 1)[0], "root": root, "sources": ["system"],
            "nvcc": root + "/bin/nvcc" if status == "ok" else None, "status": status,
            "problems": [] if status == "ok" else ["no nvcc (runtime only)"], "default": False, "active": False,
            "origins": {"system": root}, "components": components, "system_default": False, "layout": "classic",
            "real": root, "component_sources": {k: root + "/version.json" for k, v in components.items() if v},
            "version_json": {"cuda": version, "cuda_cudart": version}, "size_bytes": 4_200_000_000 + node,
            "compiles": None, "duplicates": [], "driver_supported": True,
            "driver_check": {"id": "driver.supports_toolkit", "level": "ok", "message": "driver supports %s" % version,
                             "hint": None, "facts": {"root": root}}}


def report(node, count):
    name = "node%05d" % node
    release = "570.195.03" if node % 997 == 0 else "580.95.05"
    kits = [t for t in TOOLKITS if not (t[0] == "12.4.131" and node % 1009 == 0)]
    gpu = ("NVIDIA H100 80GB HBM3", "9.0") if node < count * 0.6 else ("NVIDIA A100-SXM4-80GB", "8.0")
    return {"kind": "cudaswitch-audit", "format": 1, "cudaswitch": "0.1.0", "host": name, "root": "/", "executed": True,
            "driver": {"present": True, "release": release, "release_source": "proc", "cuda": "13.0", "cuda_int": 13000,
                       "cuda_source": "cuDriverGetVersion", "libcuda": "libcuda.so.1", "gpus": [], "problems": []},
            "gpus": [{"index": i, "name": gpu[0], "capability": gpu[1]} for i in range(8)],
            "system_default": "/usr/local/cuda-13.0", "toolkits": [toolkit(*t, node) for t in kits],
            "checks": [{"id": "audit.no_exec", "level": "info", "message": "x" * 80, "hint": None, "facts": {}}]}


def generate(directory, count):
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory.parent / "lines.jsonl", "w") as lines:
        for node in range(1, count + 1):
            data = report(node, count)
            # what `srun --output=audit/%N.json cudaswitch audit --json` writes: stdout is a file
            (directory / ("node%06d.json" % node)).write_text(json.dumps(data) + "\n")
            lines.write(json.dumps(data, separators=(",", ":")) + "\n")


# The floor: the same bytes read and parsed by Python, nothing kept (what no merge can beat).
PARSE_LINES = "import json, sys\nfor line in sys.stdin.buffer:\n    json.loads(line)\n"
PARSE_FILES = ("import json, os, sys\nfor name in sorted(os.listdir(sys.argv[1])):\n"
               "    with open(os.path.join(sys.argv[1], name), 'rb') as f:\n        json.loads(f.read())\n")


def timed(argv, stdin_path=None):
    """(wall seconds, peak RSS MiB, CPU seconds) of one run; fails loudly when the merge fails.
    CPU time is shown beside wall time because a loaded 2-core box stretches the wall clock."""
    stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
    started = time.perf_counter()
    child = subprocess.Popen(argv, stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - started
    err = child.stderr.read().decode()
    if stdin_path:
        stdin.close()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("bench: %s failed: %s" % (argv[:3], err[-500:]))
    return seconds, usage.ru_maxrss / 1024.0, usage.ru_utime + usage.ru_stime


def chromium_load(page, work):
    """The page's own load time (its script records performance.now() when ready) in headless
    Chromium, and the wall time of the whole browser run; None without Chromium."""
    import re

    browser = shutil.which("chromium")
    if not browser:
        return None
    started = time.perf_counter()
    proc = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                           "--disable-component-update", "--disable-sync", "--no-first-run",
                           "--user-data-dir=%s" % (work / "profile"), "--dump-dom", page.as_uri()],
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    ready = re.search(r'data-ready-ms="(\d+)"', proc.stdout)
    return {"ready_ms": int(ready.group(1)) if ready else None, "browser_wall_s": round(wall, 2)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cudaswitch", default=shutil.which("cudaswitch"))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="cudaswitch-bench-merge-"))
    try:
        audit = work / "audit"
        generate(audit, args.reports)
        page = work / "report.html"
        cases = {"directory": ([args.cudaswitch, "audit", "merge", str(audit), "--json"], None),
                 "  parse floor": ([sys.executable, "-c", PARSE_FILES, str(audit)], None),
                 "stdin JSON lines": ([args.cudaswitch, "audit", "merge", "--json"], work / "lines.jsonl"),
                 "  parse floor ": ([sys.executable, "-c", PARSE_LINES], work / "lines.jsonl"),
                 "directory, --html": ([args.cudaswitch, "audit", "merge", str(audit), "--json", "--html", str(page)],
                                       None)}
        results = {}
        for name, (argv, stdin) in cases.items():
            runs = [timed(argv, stdin) for _ in range(args.rounds)]
            results[name] = {"median_s": round(statistics.median(r[0] for r in runs), 3),
                             "peak_rss_mib": round(max(r[1] for r in runs), 1),
                             "median_cpu_s": round(statistics.median(r[2] for r in runs), 3)}
        results["html page in Chromium"] = chromium_load(page, work)
        floor = [timed([args.cudaswitch, "audit", "merge", "--help"])[0] for _ in range(args.rounds)]
        out = {"reports": args.reports, "report_bytes": (work / "lines.jsonl").stat().st_size // args.reports,
               "rounds": args.rounds, "cases": results, "html_bytes": page.stat().st_size,
               "typer_floor_s": round(statistics.median(floor), 3), "load_average": os.getloadavg()}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    OUT.mkdir(exist_ok=True)
    (OUT / "merge-latest.json").write_text(json.dumps(out, indent=2) + "\n")
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print("%d reports of ~%d bytes, median of %d rounds" % (out["reports"], out["report_bytes"], out["rounds"]))
    for name, result in results.items():
        if "ready_ms" in (result or {}):
            print("  %-18s ready after %s ms (browser run %.2f s)"
                  % (name, result["ready_ms"], result["browser_wall_s"]))
            continue
        print("  %-20s %6.2f s wall  %6.2f s CPU  %6.1f MiB peak RSS" % (
            name, result["median_s"], result["median_cpu_s"], result["peak_rss_mib"]))
    print("  html page          %6.2f MiB" % (out["html_bytes"] / 2**20))
    print("  floor (merge --help) %.2f s; load average %.1f" % (out["typer_floor_s"], out["load_average"][0]))


if __name__ == "__main__":
    main()
