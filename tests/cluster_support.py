"""A 64-node cluster for the fan-out tests: one root per node under CUDASWITCH_ROOT, each with its
own real toolkits (tests/kits.py), its own libcuda stand-in (tests/verify_support.build_libcuda)
for the driver and GPUs, /proc's driver line and /etc/hostname.

It mirrors a partition that was imaged three times (three GPU models), then drifted: two nodes got
another driver, one lost its CUDA 12.4 (and the NCCL inside it), one has a hand-edited config that
makes its audit fail. Each node's audit runs on this host as `cudaswitch audit --json --compact`
would on the node itself: pdsh/clush `-R exec` substitute %h into the environment that points
cudaswitch at the node's root.
"""

import json
import shutil
import subprocess
from pathlib import Path

from tests import kits
from tests.conftest import SCRIPTS
from tests.verify_support import build_libcuda, write_proc_version

NODES = ["node%02d" % n for n in range(1, 65)]
HOSTLIST = "node[01-64]"
# (first, last node number, GPU key of verify_support.GPUS, GPUs per node)
TYPES = [(1, 40, "sm_90", 8), (41, 56, "sm_80", 8), (57, 64, "sm_89", 4)]
DRIVER, DRIVER_CUDA = "580.95.05", 13000  # the R580 branch: CUDA 13.0
OTHER_DRIVER, OTHER_CUDA = "570.195.03", 12080  # R570: CUDA 12.8
OTHER_DRIVER_NODES = ["node07", "node33"]
WITHOUT_124 = "node50"
FAILING = "node61"
NCCL = "2.21.5"
LIBCUDA = "usr/lib/x86_64-linux-gnu/libcuda.so.1"

# Every node's audit, as pdsh and clush run it: %h is the node's name.
NODE_ENV = ["CUDASWITCH_ROOT={base}/%h", "CUDASWITCH_LIBCUDA={base}/%h/" + LIBCUDA,
            "CUDASWITCH_CONFIG_DIR={base}/%h/etc/cudaswitch", "CUDASWITCH_CACHE_DIR={base}/%h/var/cache/cudaswitch",
            "CUDASWITCH_DATA_DIR={base}/%h/var/lib/cudaswitch", "HOME=/root", "PATH=" + SCRIPTS + ":/usr/bin:/bin"]
AUDIT = ["cudaswitch", "audit", "--json", "--compact"]


def node_command(base: Path):
    return ["env", *(item.format(base=base) for item in NODE_ENV), *AUDIT]


def _gpu_of(number):
    for first, last, gpu, count in TYPES:
        if first <= number <= last:
            return gpu, count
    raise ValueError(number)


def add_nccl(toolkit: Path, version: str):
    """NCCL as NVIDIA's tarball leaves it when copied into a toolkit: nccl.h and libnccl.so.X.Y.Z."""
    major, minor, patch = version.split(".")
    include = toolkit / "targets/x86_64-linux/include"
    (include / "nccl.h").write_text("#define NCCL_MAJOR %s\n#define NCCL_MINOR %s\n#define NCCL_PATCH %s\n"
                                    % (major, minor, patch))
    lib = toolkit / "targets/x86_64-linux/lib"
    (lib / ("libnccl.so." + version)).write_bytes(b"\x7fELF")
    (lib / "libnccl.so.2").symlink_to("libnccl.so." + version)


def build_cluster(base: Path) -> Path:
    """BASE/nodeNN for each node; returns BASE."""
    template = base / ".template"
    kits.install_classic(kits.cuda13("13.0"), template / "usr/local/cuda-13.0", "13.0")
    kits.install_classic_runtime12(template / "usr/local/cuda-12.4")
    add_nccl(template / "usr/local/cuda-12.4", NCCL)
    libs = {}
    for number, name in enumerate(NODES, 1):
        root = base / name
        # hardlinked copies: 64 nodes of the same real toolkits in seconds, as an image would be
        subprocess.run(["cp", "-al", str(template), str(root)], check=True, timeout=120)
        gpu, count = _gpu_of(number)
        other = name in OTHER_DRIVER_NODES
        key = (OTHER_CUDA if other else DRIVER_CUDA, gpu, count)
        if key not in libs:
            libs[key] = build_libcuda(base / ".libs" / ("%d-%s-%d" % key), key[0], init_rc=0, gpus=[gpu] * count)
        (root / LIBCUDA).parent.mkdir(parents=True)
        shutil.copy(libs[key], root / LIBCUDA)
        write_proc_version(root, OTHER_DRIVER if other else DRIVER)
        (root / "etc/cudaswitch").mkdir(parents=True)
        (root / "etc/hostname").write_text(name + "\n")
        if name == WITHOUT_124:
            shutil.rmtree(root / "usr/local/cuda-12.4")
        if name == FAILING:
            (root / "etc/cudaswitch/config.toml").write_text('probe_timeout = "twenty"\n')
    return base


def skewed_nodes(merged):
    """Every node the skew report names: off the common driver, missing a toolkit or library, a
    toolkit its driver cannot run, a GPU a toolkit cannot target, no report, refused."""
    skew, named = merged["skew"], set()
    releases = skew["driver"]["releases"]
    common = max(releases, key=lambda r: len(releases[r]))
    named.update(h for release, hosts in releases.items() if release != common for h in hosts)
    for entry in skew["toolkits"] + [e for entries in skew["components"].values() for e in entries]:
        named.update(entry["missing_on"])
    for entry in skew["gpus"]["cannot_target"] + skew["driver_cannot_run"]:
        named.update(entry["nodes"])
    named.update(skew["missing"])
    return named


def merged_json(proc):
    try:
        return json.loads(proc.stdout)
    except ValueError:
        raise AssertionError("merge printed no JSON (exit %d): %s" % (proc.returncode, proc.stderr[-2000:])) from None
