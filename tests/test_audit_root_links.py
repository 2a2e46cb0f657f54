"""`audit --root` on an image that points out of itself. An unpacked container image or a node's
mounted root can hold links to absolute paths that, followed by the auditing host's kernel, land
in the auditor's own /usr/local (a `cuda-12.9/bin -> /usr/local/cuda-12.9/bin` made by a careless
Dockerfile), loops, a /proc-like tree whose files are FIFOs, and a FIFO where nvcc belongs. Hand-made
layouts (each mirrors one of those images); the "host" side is a directory outside the root whose
nvcc is a canary and whose files say CUDA 77.7, so a report quoting 77.7 read the host."""

import json
import os
import subprocess

import pytest

from tests.conftest import CUDASWITCH

HOST_VERSION = "77.7.7"


def host_side(base, canary):
    """What the auditing host has outside the image: a toolkit whose every file says 77.7."""
    outside = base / "host-usr-local" / "cuda-host"
    (outside / "bin").mkdir(parents=True)
    (outside / "include").mkdir()
    (outside / "bin" / "nvcc").write_text("#!/bin/sh\necho nvcc >> '%s'\n"
                                          "echo 'Cuda compilation tools, release 77.7, V%s'\n"
                                          % (canary, HOST_VERSION))
    (outside / "bin" / "nvcc").chmod(0o755)
    (outside / "include" / "cuda_runtime_api.h").write_text("#define CUDART_VERSION 77070\n")
    (outside / "version.json").write_text(json.dumps({"cuda": {"version": HOST_VERSION},
                                                      "cuda_nvcc": {"version": HOST_VERSION}}))
    os.mkfifo(outside / "include" / "cudnn_version.h")  # reading it would hang: a read is a hang
    return outside


def image(base, outside):
    root = base / "image"
    local = root / "usr" / "local"
    local.mkdir(parents=True)
    # bin links to the host's bin by absolute path (the kernel follows it out of the image)
    escaped = local / "cuda-12.9"
    escaped.mkdir()
    (escaped / "version.json").write_text(json.dumps({"cuda_nvcc": {"version": "12.9.41"}}))
    os.symlink(str(outside / "bin"), escaped / "bin")
    # a relative link that climbs above the image root to the host's include
    climbing = local / "cuda-12.8"
    (climbing / "bin").mkdir(parents=True)
    (climbing / "version.json").write_text(json.dumps({"cuda_nvcc": {"version": "12.8.61"}}))
    os.symlink(os.path.relpath(outside / "include", climbing), climbing / "include")
    # a whole toolkit dir linked out
    os.symlink(str(outside), local / "cuda-12.7")
    # a FIFO where nvcc belongs, executable
    fifo = local / "cuda-12.6"
    (fifo / "bin").mkdir(parents=True)
    (fifo / "version.json").write_text(json.dumps({"cuda_nvcc": {"version": "12.6.20"}}))
    os.mkfifo(fifo / "bin" / "nvcc")
    os.chmod(fifo / "bin" / "nvcc", 0o755)
    # loops
    os.symlink("cuda-12.5", local / "cuda-12.5")
    (local / "cuda-12.4" / "lib64").mkdir(parents=True)
    os.symlink("../lib64", local / "cuda-12.4" / "lib64" / "again")
    (local / "cuda-12.4" / "version.json").write_text(json.dumps({"cuda_nvcc": {"version": "12.4.99"}}))
    # a /proc-like tree and /etc/hostname as FIFOs
    proc = root / "proc" / "driver" / "nvidia" / "gpus" / "0000:01:00.0"
    proc.mkdir(parents=True)
    os.mkfifo(root / "proc" / "driver" / "nvidia" / "version")
    os.mkfifo(proc / "information")
    (root / "etc").mkdir()
    os.mkfifo(root / "etc" / "hostname")
    os.symlink(str(outside), local / "cuda")  # /usr/local/cuda -> out of the image
    return root


@pytest.mark.parametrize("extra", [[], ["--exec"], ["--exec", "--compile"]])
def test_audit_of_an_image_reads_and_runs_nothing_outside_it(host, tmp_path, extra):
    canary = tmp_path / "canary"
    outside = host_side(tmp_path, canary)
    root = image(tmp_path, outside)
    env = {k: v for k, v in host.env.items() if k != "CUDASWITCH_ROOT"}
    try:
        proc = subprocess.run([CUDASWITCH, "audit", "--root", str(root), "--json", "--no-progress", *extra],
                              capture_output=True, text=True, env=env, timeout=120, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise AssertionError("audit --root hung (a FIFO read?)") from None
    assert "Traceback" not in proc.stderr, proc.stderr
    report = json.loads(proc.stdout)
    assert not canary.exists(), "ran the host's nvcc: " + canary.read_text()
    assert "77.7" not in proc.stdout and "77070" not in proc.stdout
    by_root = {t["root"]: t for t in report["toolkits"]}
    for name in ("cuda-12.9", "cuda-12.8"):
        entry = by_root[str(root / "usr" / "local" / name)]
        assert entry["status"] == "broken", entry
        assert any("leaves the audited root" in p for p in entry["problems"]), entry["problems"]
    fifo = by_root[str(root / "usr" / "local" / "cuda-12.6")]
    assert fifo["nvcc"] is None and fifo["status"] != "ok" and fifo["components"]["nvcc"] is None
    assert by_root[str(root / "usr" / "local" / "cuda-12.4")]["version"] == "12.4.99"
    linked_out = by_root[str(root / "usr" / "local" / "cuda-12.7")]
    assert linked_out["status"] == "broken" and set(linked_out["components"].values()) == {None}
