"""python -m bench.hostile_images [--cudaswitch PATH] [--timeout S] [--json]

`audit --image` on the small hostile images of the adversarial review, as oci-archive and
docker-archive files written by skopeo (tests/hostile_images.py): a 256 KiB and a 1 MiB pax header
of digits in the image's archive, one gzip blob (64 or 200 MiB of zeros) listed as 512 layers, a layer of a million
symlinks, a layer making 1.5 million directories. Reports, per case, the wall time, the peak RSS
of the audit process (getrusage of the child), its exit status and stderr's line. Budget
(DESIGN.md): refused or audited in <= 10 s and <= 200 MiB. --timeout (default 120 s) stops a case
that hangs (the old code's). JSON goes to bench/out/hostile-images-latest.json."""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/ builds the images

from tests import hostile_images as hostile  # noqa: E402

OUT = Path(__file__).resolve().parent / "out"


def build(work):
    """{case: {transport: ref}}."""
    tool = hostile.toolkit_layer()
    cases = {"pax-256KiB": [tool], "pax-1MiB": [tool], "blob-64MiB-x512": [tool, hostile.zeros_layer(64)],
             "blob-200MiB-x512": [tool, hostile.zeros_layer(200)],
             "links-1M": [tool, hostile.links_layer(1_000_000)],
             "dirs-1.5M": [tool, hostile.dirs_layer(12_000)]}
    refs = {}
    for case, listed in cases.items():
        sys.stderr.write("bench: building %s\n" % case)
        refs[case] = hostile.archives(work / case, listed)
    for transport in ("oci-archive", "docker-archive"):
        hostile.relist(refs["blob-64MiB-x512"][transport], 511)
        hostile.relist(refs["blob-200MiB-x512"][transport], 511)
        hostile.with_pax_header(refs["pax-256KiB"][transport], 256 << 10)
        hostile.with_pax_header(refs["pax-1MiB"][transport], 1 << 20)
    return refs


# runs the audit as its child and prints that child's peak RSS (KiB) alone on its last line
RSS_OF_CHILD = ("import resource, subprocess, sys\n"
                "try:\n    code = subprocess.run(sys.argv[2:], timeout=float(sys.argv[1])).returncode\n"
                "except subprocess.TimeoutExpired:\n    code = 'timeout'\n"
                "print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)")


def measure(script, ref, timeout):
    """(wall s, peak RSS MiB, exit status, stderr's line) of one audit in a fresh process."""
    env = dict(os.environ, CUDASWITCH_CACHE_DIR=tempfile.mkdtemp(prefix="cs-bench-cache-"))
    command = [script, "audit", "--image", ref, "--driver", "550.54.15", "--no-progress", "--json"]
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", RSS_OF_CHILD, str(timeout)] + command, env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - started
    shutil.rmtree(env["CUDASWITCH_CACHE_DIR"], ignore_errors=True)
    lines = proc.stderr.strip().splitlines()
    code, rss = lines[-1].split()
    line = lines[-2][:140] if len(lines) > 1 else "(audited)"
    return round(wall, 2), round(int(rss) / 1024, 1), code, line


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cudaswitch", default=str(Path(sys.executable).parent / "cudaswitch"))
    parser.add_argument("--timeout", type=float, default=120)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="cs-bench-hostile-"))
    try:
        refs = build(work)
        rows = []
        for case, by_transport in refs.items():
            for transport, ref in by_transport.items():
                wall, rss, code, line = measure(args.cudaswitch, ref, args.timeout)
                rows.append({"case": case, "transport": transport, "wall_s": wall, "peak_rss_mib": rss,
                             "exit": code, "stderr": line})
                sys.stderr.write("%-20s %-15s %7.2f s %7.1f MiB  exit %s  %s\n" % (
                    case, transport, wall, rss, code, line))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    OUT.mkdir(exist_ok=True)
    (OUT / "hostile-images-latest.json").write_text(json.dumps(rows, indent=2))
    if args.json:
        print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
