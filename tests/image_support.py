"""Container images for the `audit --image` tests, built by the tools users build them with: umoci
(an OCI layout: init, new, config, unpack --rootless, repack, raw add-layer) and skopeo (the same
image as an oci-archive and a docker-archive, as `docker save` / `podman save` write it).

The image (cached in the kits cache, built once per BUILD version):
  layer 1  a real runtime-only CUDA 12.4 tree (tests/kits.py) made complete with stand-ins for the
           few compile tools CUDA 12's wheels lack (nvcc carries the version banner the real binary
           carries; nothing is run), /usr/local/cuda -> /usr/local/cuda-12.4 (absolute, as NVIDIA's
           images link it), a venv with torch 2.5.1+cu121 and NVIDIA's split cuda_runtime 12.1 wheel,
           /etc/os-release
  layer 2  `rm bin/nvcc` repacked by umoci: a .wh.nvcc whiteout (the 12.4 toolkit is incomplete)
  layer 3  written here, added verbatim: site-packages/nvidia/ made opaque (.wh..wh..opq: the
           12.1 wheel is gone, a cudnn wheel's library is new) and torch upgraded to 2.6.0+cu124
           (.wh.torch-2.5.1.dist-info and a new version.py)
Tags: `base` (layer 1 only) and `cuda` (all three).
"""

import io
import json
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

from tests import kits

BUILD = "v4"
REQUIRE = "cuda>=12.4 brand=tesla,driver>=535,driver<536"
SITE = "opt/venv/lib/python3.11/site-packages"
ENV = {
    "CUDA_VERSION": "12.4.1",
    "NVIDIA_REQUIRE_CUDA": REQUIRE,
    "PATH": "/opt/venv/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LD_LIBRARY_PATH": "/usr/local/cuda/lib64",
    "VIRTUAL_ENV": "/opt/venv",
}
NVCC_BANNER = b"nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 12.4, V12.4.131\n"
OS_RELEASE = 'PRETTY_NAME="Ubuntu 22.04.4 LTS"\nID=ubuntu\nVERSION_ID="22.04"\n'


def run(*cmd, timeout=600):
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise AssertionError("%s failed: %s" % (" ".join(map(str, cmd)), proc.stderr[-2000:]))
    return proc


def torch_files(version, cuda):
    """What `pip install torch` leaves that says which torch it is: version.py and the METADATA."""
    short = version.split("+")[0]
    return {"torch/version.py": "__version__ = '%s'\ndebug = False\ncuda: Optional[str] = '%s'\n"
                                "git_version = '0'\nhip: Optional[str] = None\n" % (version, cuda),
            "torch/__init__.py": "",
            "torch-%s.dist-info/METADATA" % short: "Metadata-Version: 2.1\nName: torch\nVersion: %s\n" % version}


def _write(path: Path, text, mode=0o644):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    path.chmod(mode)


def populate_base(rootfs: Path):
    cuda = rootfs / "usr/local/cuda-12.4"
    kits.install_classic_runtime12(cuda)
    # CUDA 12's wheels have no nvcc, cicc, fatbinary or nvlink: stand-ins, never run by the audit
    _write(cuda / "bin/nvcc", b"\x7fELF\x02\x01\x01" + b"\0" * 4096 + NVCC_BANNER + b"\0" * 4096, 0o755)
    for tool in ("bin/fatbinary", "bin/nvlink", "nvvm/bin/cicc"):
        _write(cuda / tool, b"\x7fELF\x02\x01\x01\0", 0o755)
    os.symlink("/usr/local/cuda-12.4", rootfs / "usr/local/cuda")
    _write(rootfs / "etc/os-release", OS_RELEASE)
    site = rootfs / SITE
    for name, text in torch_files("2.5.1+cu121", "12.1").items():
        _write(site / name, text)
    _write(site / "torch/_old_module.py", "")
    runtime = site / "nvidia/cuda_runtime"
    _write(runtime / "lib/libcudart.so.12", b"\x7fELF", 0o755)
    _write(runtime / "include/cuda_runtime_api.h", "#define CUDART_VERSION 12010\n")
    _write(site / "nvidia_cuda_runtime_cu12-12.1.105.dist-info/METADATA",
           "Metadata-Version: 2.1\nName: nvidia-cuda-runtime-cu12\nVersion: 12.1.105\n")
    (rootfs / "opt/venv/bin").mkdir(parents=True)
    os.symlink("/usr/bin/python3", rootfs / "opt/venv/bin/python3")
    _write(rootfs / "opt/venv/pyvenv.cfg", "home = /usr/bin\n")


def layer_tar(entries) -> bytes:
    """An uncompressed layer tar from [(name, bytes | None for a dir, mode)]."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data, mode in entries:
            info = tarfile.TarInfo(name)
            info.mode, info.mtime = mode, 1700000000
            if data is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def upgrade_layer() -> bytes:
    entries = [(SITE + "/nvidia/.wh..wh..opq", b"", 0o644),
               (SITE + "/nvidia/cudnn/lib/libcudnn.so.9", b"\x7fELF", 0o755),
               (SITE + "/.wh.torch-2.5.1.dist-info", b"", 0o644),
               (SITE + "/torch/.wh..wh..opq", b"", 0o644)]
    for name, text in torch_files("2.6.0+cu124", "12.4").items():
        entries.append((SITE + "/" + name, text.encode(), 0o644))
    return layer_tar(entries)


def _build(tmp: Path):
    umoci = kits.require("umoci")
    skopeo = kits.require("skopeo")
    layout, bundle = tmp / "layout", tmp / "bundle"
    run(umoci, "init", "--layout", layout)
    run(umoci, "new", "--image", "%s:cuda" % layout)
    run(umoci, "config", "--image", "%s:cuda" % layout, "--os", "linux", "--architecture", "amd64",
        *[a for k, v in ENV.items() for a in ("--config.env", "%s=%s" % (k, v))])
    run(umoci, "unpack", "--rootless", "--image", "%s:cuda" % layout, bundle)
    populate_base(bundle / "rootfs")
    run(umoci, "repack", "--image", "%s:cuda" % layout, bundle)
    run(umoci, "tag", "--image", "%s:cuda" % layout, "base")
    shutil.rmtree(bundle)  # a repack diffs against the unpacked state: unpack layer 1 to diff against it
    run(umoci, "unpack", "--rootless", "--image", "%s:cuda" % layout, bundle)
    (bundle / "rootfs/usr/local/cuda-12.4/bin/nvcc").unlink()
    run(umoci, "repack", "--image", "%s:cuda" % layout, bundle)
    (tmp / "upgrade.tar").write_bytes(upgrade_layer())
    run(umoci, "raw", "add-layer", "--image", "%s:cuda" % layout, tmp / "upgrade.tar")
    (tmp / "upgrade.tar").unlink()
    for dest in ("oci-archive:%s:cuda" % (tmp / "image-oci.tar"),
                 "docker-archive:%s:cuda:12.4" % (tmp / "image-docker.tar")):
        run(skopeo, "--insecure-policy", "copy", "oci:%s:cuda" % layout, dest)
    shutil.rmtree(bundle)


def cuda_image() -> Path:
    """The cached directory holding layout/ (OCI, tags base and cuda), image-oci.tar, image-docker.tar."""
    kits.require("umoci")
    kits.require("skopeo")
    return kits._cached("oci-cuda-image-" + BUILD, _build)


def references(base: Path):
    return {"oci": "oci:%s:cuda" % (base / "layout"), "oci-archive": "oci-archive:%s:cuda" % (base / "image-oci.tar"),
            "docker-archive": "docker-archive:%s:cuda:12.4" % (base / "image-docker.tar")}


# ---------------------------------------------------------------- hand-made layouts


def sha256(data: bytes) -> str:
    import hashlib

    return "sha256:" + hashlib.sha256(data).hexdigest()


def write_layout(dest: Path, layers, env=None, tamper=None):
    """An OCI layout with the given layer blobs (bytes), written as a registry would; `tamper(blobs)`
    may alter stored blobs after their digests were taken (a damaged or altered download)."""
    blobs = dest / "blobs/sha256"
    blobs.mkdir(parents=True)
    config = {"architecture": "amd64", "os": "linux",
              "config": {"Env": ["%s=%s" % kv for kv in (env or {}).items()]},
              "rootfs": {"type": "layers", "diff_ids": [sha256(layer) for layer in layers]}}
    stored = {}
    descriptors = []
    for layer in layers:
        stored[sha256(layer)] = layer
        descriptors.append({"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": sha256(layer),
                            "size": len(layer)})
    config_bytes = json.dumps(config).encode()
    manifest = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                           "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                                      "digest": sha256(config_bytes), "size": len(config_bytes)},
                           "layers": descriptors}).encode()
    stored[sha256(config_bytes)] = config_bytes
    stored[sha256(manifest)] = manifest
    if tamper:
        tamper(stored)
    for digest, data in stored.items():
        (blobs / digest.split(":")[1]).write_bytes(data)
    (dest / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
    (dest / "index.json").write_text(json.dumps({"schemaVersion": 2, "manifests": [
        {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": sha256(manifest),
         "size": len(manifest), "annotations": {"org.opencontainers.image.ref.name": "t"}}]}))
    return "oci:%s:t" % dest
