"""a root with 300 toolkit-looking directories, as a big cluster image holds them
(many /usr/local/cuda-* releases, HPC SDK trees, conda envs), audits in bounded time with a
progress bar on a terminal's stderr, and stdout stays clean JSON.

The trees are small hand-made copies of the real layouts (version.json, a cuda_runtime_api.h,
a libcudart.so.X.Y.Z, an nvcc carrying NVIDIA's banner, and the other parts of the compile
pipeline as empty executables): 300 real toolkits would be 90 GB. Their tools are scripts that
fail if run, so the test also shows nothing in the image runs.
"""

import json
import os
import pty
import subprocess
import threading
import time

from tests.conftest import CUDASWITCH, Host

RELEASES = [("11.8", "11.8.89"), ("12.1", "12.1.105"), ("12.2", "12.2.140"), ("12.4", "12.4.131"),
            ("12.6", "12.6.85"), ("12.8", "12.8.93"), ("12.9", "12.9.86"), ("13.0", "13.0.88")]


def small_toolkit(root, short, full, lib="lib64"):
    (root / "bin").mkdir(parents=True)
    nvcc = root / "bin/nvcc"
    nvcc.write_text("#!/bin/sh\n# Cuda compilation tools, release %s, V%s\nexit 99\n" % (short, full))
    nvcc.chmod(0o755)
    for tool in ("bin/ptxas", "bin/fatbinary", "bin/nvlink", "nvvm/bin/cicc"):
        (root / tool).parent.mkdir(parents=True, exist_ok=True)
        (root / tool).write_text("#!/bin/sh\nexit 99\n")
        (root / tool).chmod(0o755)
    (root / "include/crt").mkdir(parents=True)
    (root / "include/crt/host_config.h").write_text("#if __GNUC__ > 15\n#error -- unsupported GNU version!\n#endif\n")
    (root / "include/cuda_runtime.h").write_text("#include \"cuda_runtime_api.h\"\n")
    major, minor = (int(p) for p in short.split("."))
    (root / "include/cuda_runtime_api.h").write_text("#define CUDART_VERSION %d\n" % (major * 1000 + minor * 10))
    (root / lib).mkdir(parents=True, exist_ok=True)
    (root / lib / ("libcudart.so." + full)).write_bytes(b"\0" * 1024)
    (root / "version.json").write_text(json.dumps({"cuda": {"version": full}, "cuda_nvcc": {"version": full},
                                                   "cuda_cudart": {"version": full}}))


def build_cluster_image(root):
    """120 /usr/local/cuda-* dirs, 100 HPC SDK cuda dirs (25 releases x 4), 80 conda envs."""
    for n in range(120):
        short, full = RELEASES[n % len(RELEASES)]
        small_toolkit(root / ("usr/local/cuda-%s-build%03d" % (short, n)), short, full)
    for n in range(25):
        for short, full in RELEASES[n % 4: n % 4 + 4]:
            small_toolkit(root / ("opt/nvidia/hpc_sdk/Linux_x86_64/%d.%d/cuda/%s" % (20 + n // 12, n % 12 + 1, short)),
                          short, full)
    for n in range(80):
        short, full = RELEASES[n % len(RELEASES)]
        env = root / ("opt/conda/envs/env%03d" % n)
        small_toolkit(env, short, full, lib="targets/x86_64-linux/lib")
        (env / "conda-meta").mkdir()
        (env / ("conda-meta/cuda-nvcc-%s-0.json" % full)).write_text("{}")


def test_300_toolkit_dirs_with_progress(tmp_path):
    (tmp_path / "root").mkdir()
    host = Host(tmp_path / "root", tmp_path / "work")
    build_cluster_image(host.root)
    master, slave = pty.openpty()
    seen = []
    reader = threading.Thread(target=lambda: _drain(master, seen))
    reader.start()
    started = time.monotonic()
    proc = subprocess.run([CUDASWITCH, "audit", "--json", "--root", str(host.root)], stdout=subprocess.PIPE,
                          stderr=slave, stdin=subprocess.DEVNULL, env={**host.env, "COLUMNS": "100"}, timeout=300)
    elapsed = time.monotonic() - started
    os.close(slave)
    reader.join(10)
    os.close(master)
    terminal = b"".join(seen).decode("utf-8", "replace")
    assert proc.returncode == 0, terminal
    report = json.loads(proc.stdout)  # stdout is the report and nothing else
    assert len(report["toolkits"]) == 300
    assert {t["status"] for t in report["toolkits"]} == {"ok"}
    assert sum(1 for t in report["toolkits"] if t["sources"] == ["conda"]) == 80
    assert "reading toolkits" in terminal and "300/300" in terminal
    print("audit of 300 toolkit dirs: %.2f s" % elapsed)
    assert elapsed < 60


def _drain(fd, seen):
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO once the last writer closed the pty
            return
        if not chunk:
            return
        seen.append(chunk)
