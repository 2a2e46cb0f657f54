"""A mirror of NVIDIA's redistributable archives, laid out in NVIDIA's exact scheme and built from
real toolkit files, plus a local HTTP server for it. Nothing here talks to NVIDIA's host.

What it mirrors:
- CUDA 13.1.2 (`compute/cuda/redist/redistrib_13.1.2.json`): the release whose `cuda-toolkit`
  13.1.2.0 metapackage on PyPI pins the wheels tests/kits.py's cuda13("13.1") holds: cuda_nvcc,
  cuda_crt, libnvvm and cuda_cccl 13.1.115, cuda_cudart 13.1.80. Each archive holds that wheel's
  files (from its RECORD) under `<name>-linux-x86_64-<version>-archive/` with `lib/`, not the
  wheel's `nvidia/cu13/`; cudart's library is versioned with soname and dev links as NVIDIA's
  archive ships it.
- CUDA 12.4.1 (`redistrib_12.4.1.json`): cuda_nvcc 12.4.131 and cuda_cudart 12.4.127 from the
  CUDA 12 wheels, which hold ptxas and nvvm but no nvcc (NVIDIA ships none on PyPI for 12.x, and
  Debian's only nvidia-cuda-toolkit is 11.8): the real case of an older release whose archives do
  NOT hold nvcc.
- CUDA 11.8.0 (`redistrib_11.8.0.json`; `mirror_with_cuda11()`): cuda_nvcc and cuda_cudart 11.8.89
  laid out as NVIDIA's 11.8 archives are (bin/, include/, lib/, nvvm/), from real 11.8.89 files:
  nvcc, cicc, fatbinary, nvlink, cudafe++ and bin2c from Debian's nvidia-cuda-toolkit package
  (tests/debkit.py), ptxas, crt/ headers and nvvm/ from the nvidia-cuda-nvcc-cu11 wheel, headers and
  libcudart from the nvidia-cuda-runtime-cu11 wheel, and the static cudart, cudadevrt and culibos
  from Debian's nvidia-cuda-dev: the real case of an older release whose archives DO hold nvcc.
- cuDNN 9.24.0.43 for CUDA 13 (`compute/cudnn/redist/redistrib_9.24.0.json`, variant cuda13;
  `mirror_with_cudnn()`), from the nvidia-cudnn-cu13 wheel of the torch CUDA venv: its headers, libcudnn.so.9 and
  libcudnn_cnn.so.9; the 100-260 MiB engine libraries are left out to keep the mirror small.

Archives are xz at preset 0 (still `.tar.xz`, as NVIDIA's; the preset only trades size for time).
The built mirrors are cached beside the kits, once per machine, under a lock.
"""
from __future__ import annotations

import hashlib
import http.server
import json
import lzma
import os
import shutil
import tarfile
import threading
from pathlib import Path

from tests import kits

PLATFORM = "linux-x86_64"
CU13_COMPONENTS = {  # redist key -> (wheel dist name, manifest "name")
    "cuda_nvcc": ("nvidia_cuda_nvcc", "CUDA NVCC"),
    "cuda_cudart": ("nvidia_cuda_runtime", "CUDA Runtime (cudart)"),
    "cuda_crt": ("nvidia_cuda_crt", "CUDA CRT"),
    "libnvvm": ("nvidia_nvvm", "CUDA NVVM"),
    "cuda_cccl": ("nvidia_cuda_cccl", "CXX Core Compute Libraries"),
}
CU12_COMPONENTS = {"cuda_nvcc": ("nvidia_cuda_nvcc_cu12", "CUDA NVCC"),
                   "cuda_cudart": ("nvidia_cuda_runtime_cu12", "CUDA Runtime (cudart)")}
CUDNN_LIBS = ("libcudnn.so.9", "libcudnn_cnn.so.9")


def _dist_info(site: Path, dist: str) -> Path:
    [found] = [d for d in site.glob(dist + "-*.dist-info")]
    return found


def _record_files(site: Path, dist_info: Path) -> list[str]:
    """Paths (relative to site) the wheel installed under nvidia/, from its RECORD."""
    names = [line.split(",")[0] for line in (dist_info / "RECORD").read_text().splitlines() if line]
    return [n for n in names if n.startswith("nvidia/") and not n.endswith(("__init__.py", ".pyc"))
            and "/.metadata/" not in n]  # wheel packaging data, no part of NVIDIA's archives


def _stage(site: Path, files: list[str], top: Path, strip: int) -> None:
    """Hardlink the wheel's files into `top`, with the first `strip` path parts removed."""
    for name in files:
        rel = Path(*Path(name).parts[strip:])
        dest = top / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        kits._link_or_copy(site / name, dest)


def _version_lib(libdir: Path, soname: str, full: str) -> None:
    """libcudart.so.13 -> libcudart.so.13.1.80 with soname and dev links, as NVIDIA's archive has."""
    stem = soname[: soname.index(".so") + 3]
    real = libdir / f"{stem}.{full}"
    os.rename(libdir / soname, real)
    (libdir / soname).symlink_to(real.name)
    if not (libdir / stem).exists():
        (libdir / stem).symlink_to(soname)


def _tar_xz(top: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    with lzma.open(dest, "wb", preset=0) as raw, tarfile.open(fileobj=raw, mode="w") as archive:
        archive.add(top, arcname=top.name)


def _entry(base: Path, rel: str) -> dict:
    data = (base / rel).read_bytes()
    return {"relative_path": rel, "sha256": hashlib.sha256(data).hexdigest(),
            "md5": hashlib.md5(data).hexdigest(), "size": str(len(data))}  # NVIDIA writes size as a string


def _component(base: Path, work: Path, key: str, name: str, version: str, fill, variant: str = "") -> dict:
    """Build one archive under base/<key>/<platform>/ and return its manifest object."""
    stem = f"{key}-{PLATFORM}-{version}{'_' + variant if variant else ''}-archive"
    top = work / stem
    top.mkdir(parents=True)
    fill(top)
    rel = f"{key}/{PLATFORM}/{stem}.tar.xz"
    _tar_xz(top, base / rel)
    shutil.rmtree(top)
    item = {"name": name, "license": "CUDA Toolkit", "license_path": f"{key}/LICENSE.txt", "version": version}
    item[PLATFORM] = {variant: _entry(base, rel)} if variant else _entry(base, rel)
    return item


def _wheel_component(site, dist, strip, key, cudart_soname=None):
    info = _dist_info(site, dist)
    version = info.name[len(dist) + 1: -len(".dist-info")]

    def fill(top: Path):
        _stage(site, _record_files(site, info), top, strip)
        for lic in (info / "licenses").glob("*"):
            shutil.copy(lic, top / "LICENSE")
        if cudart_soname and (top / "lib" / cudart_soname).exists():
            _version_lib(top / "lib", cudart_soname, version)

    return version, fill


def _manifest(base: Path, release: str, date: str, product: str, items: dict) -> None:
    document = {"release_date": date, "release_label": release, "release_product": product, **items}
    (base / f"redistrib_{release}.json").write_text(json.dumps(document, indent=4) + "\n")


def _build_cuda(root: Path, work: Path, release: str, date: str, site: Path, table: dict, strip: int,
                soname: str) -> None:
    base = root / "compute" / "cuda" / "redist"
    items = {}
    for key, (dist, name) in table.items():
        version, fill = _wheel_component(site, dist, strip, key, soname if key == "cuda_cudart" else None)
        items[key] = _component(base, work, key, name, version, fill)
    _manifest(base, release, date, "cuda", items)


def _build_cudnn(root: Path, work: Path, site: Path) -> None:
    base = root / "compute" / "cudnn" / "redist"
    info = _dist_info(site, "nvidia_cudnn_cu13")
    version = info.name[len("nvidia_cudnn_cu13-"): -len(".dist-info")]  # 9.24.0.43
    src = site / "nvidia" / "cudnn"

    def fill(top: Path):
        kits._link_tree(src / "include", top / "include")
        (top / "lib").mkdir()
        for lib in CUDNN_LIBS:
            kits._link_or_copy(src / "lib" / lib, top / "lib" / lib)
        _version_lib(top / "lib", "libcudnn.so.9", ".".join(version.split(".")[:3]))
        shutil.copy(info / "licenses" / "License.txt", top / "LICENSE")

    item = _component(base, work, "cudnn", "NVIDIA CUDA Deep Neural Network library", version, fill, "cuda13")
    item["cuda_variant"] = ["13"]
    _manifest(base, ".".join(version.split(".")[:3]), "2026-10-01", "cudnn", {"cudnn": item})


NVCC_PROFILE_11 = """
TOP              = $(_HERE_)/..

NVVMIR_LIBRARY_DIR = $(TOP)/$(_NVVM_BRANCH_)/libdevice

LD_LIBRARY_PATH += $(TOP)/lib:
PATH            += $(TOP)/$(_NVVM_BRANCH_)/bin:$(_HERE_):

INCLUDES        +=  "-I$(TOP)/$(_TARGET_DIR_)/include" $(_SPACE_)

LIBRARIES        =+ $(_SPACE_) "-L$(TOP)/$(_TARGET_DIR_)/lib$(_TARGET_SIZE_)/stubs" "-L$(TOP)/$(_TARGET_DIR_)/lib$(_TARGET_SIZE_)"

CUDAFE_FLAGS    +=
PTXAS_FLAGS     +=
"""  # noqa: E501 (the redist archives' profile, verbatim: everything relative to bin/, Debian's points into /usr)
NVCC_11_BIN = ("nvcc", "fatbinary", "nvlink", "cudafe++", "bin2c", "__nvcc_device_query")


def _build_cuda11(root: Path, work: Path) -> None:
    from tests import debkit

    deb = debkit.cuda118()
    usr = deb / "toolkit" / "usr"
    nvcc_site = kits.cuda11_nvcc_wheel().parent.parent
    runtime = kits.cuda11_runtime() / "cuda_runtime"

    def fill_nvcc(top: Path):
        _stage(nvcc_site, _record_files(nvcc_site, _dist_info(nvcc_site, "nvidia_cuda_nvcc_cu11")), top, 2)
        for name in NVCC_11_BIN:
            src = usr / "lib/nvidia-cuda-toolkit/bin" / name
            kits._link_or_copy(src if src.exists() else usr / "bin" / name, top / "bin" / name)
        kits._link_tree(usr / "lib/nvidia-cuda-toolkit/bin/crt", top / "bin" / "crt")
        (top / "nvvm" / "bin").mkdir(parents=True)
        kits._link_or_copy(usr / "lib/nvidia-cuda-toolkit/bin/cicc", top / "nvvm/bin/cicc")
        (top / "bin" / "nvcc.profile").write_text(NVCC_PROFILE_11)
        shutil.copy(nvcc_site / "nvidia_cuda_nvcc_cu11-11.8.89.dist-info" / "License.txt", top / "LICENSE")

    def fill_cudart(top: Path):
        kits._link_tree(runtime / "include", top / "include")
        kits._link_tree(runtime / "lib", top / "lib")
        _version_lib(top / "lib", "libcudart.so.11.0", "11.8.89")
        for name in debkit.STATIC_LIBS:
            kits._link_or_copy(deb / "lib" / name, top / "lib" / name)
        shutil.copy(nvcc_site / "nvidia_cuda_nvcc_cu11-11.8.89.dist-info" / "License.txt", top / "LICENSE")

    base = root / "compute" / "cuda" / "redist"
    items = {"cuda_cudart": _component(base, work, "cuda_cudart", "CUDA Runtime (cudart)", "11.8.89", fill_cudart),
             "cuda_nvcc": _component(base, work, "cuda_nvcc", "CUDA NVCC", "11.8.89", fill_nvcc)}
    _manifest(base, "11.8.0", "2022-10-03", "cuda", items)


def _union(dest: Path, *roots: Path) -> None:
    """dest as one tree of symlinks to the files of every root (their dirs overlap: cuda_nvcc/...)."""
    for root in roots:
        for path in root.rglob("*"):
            if path.is_file():
                link = dest / path.relative_to(root)
                link.parent.mkdir(parents=True, exist_ok=True)
                link.symlink_to(path)


def mirror_with_cuda11(dest: Path) -> Path:
    """`dest` as a mirror root holding mirror()'s releases and CUDA 11.8.0, whose files come from
    Debian's non-free packages (tests/debkit.py) and so are built apart from mirror()."""
    def build(tmp: Path):
        _build_cuda11(tmp, tmp / ".work")
        shutil.rmtree(tmp / ".work")

    _union(dest, mirror(), kits._cached("redist-cuda11-v1", build))
    return dest


def torch_site() -> Path:
    """site-packages of the torch CUDA venv, which holds the nvidia-cudnn-cu13 wheel's files."""
    from tests.verify_support import torch_cuda_venv

    return next((torch_cuda_venv() / "lib").glob("python3*/site-packages"))


def mirror() -> Path:
    """The CUDA mirror's root dir (holding compute/cuda/redist), cached."""
    cu13_site = kits.cuda13("13.1").parent.parent
    cu12_site = kits.cuda12_runtime().parent

    def build(tmp: Path):
        work = tmp / ".work"
        _build_cuda(tmp, work, "13.1.2", "2026-03-05", cu13_site, CU13_COMPONENTS, 2, "libcudart.so.13")
        _build_cuda(tmp, work, "12.4.1", "2024-04-12", cu12_site, CU12_COMPONENTS, 2, "libcudart.so.12")
        shutil.rmtree(work)

    return kits._cached("redist-cuda-v3", build)


def mirror_with_cudnn(dest: Path) -> Path:
    """`dest` as a mirror root with compute/cuda (from mirror()) and compute/cudnn, linked in. cuDNN
    is built apart because its files come from the 5.5 GiB torch CUDA venv, which only this needs."""
    cudnn_site = torch_site()

    def build(tmp: Path):
        _build_cudnn(tmp, tmp / ".work", cudnn_site)
        shutil.rmtree(tmp / ".work")

    cudnn = kits._cached("redist-cudnn-v1", build)
    (dest / "compute").mkdir(parents=True)
    (dest / "compute" / "cuda").symlink_to(mirror() / "compute" / "cuda")
    (dest / "compute" / "cudnn").symlink_to(cudnn / "compute" / "cudnn")
    return dest


class MirrorHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the mirror dir (directory listings included, as NVIDIA's host gives); a file whose
    name is in `server.stall` is sent in part, then held until `server.release` is set."""

    def log_message(self, *args):
        pass

    def copyfile(self, source, outputfile):
        name = os.path.basename(self.path)
        if name not in self.server.stall:
            return super().copyfile(source, outputfile)
        outputfile.write(source.read(4 << 20))
        outputfile.flush()
        self.server.stalled.set()
        self.server.release.wait(300)


class Mirror:
    """A running server for a mirror dir: `url` is http://127.0.0.1:PORT/compute/cuda/redist/."""

    def __init__(self, root: Path):
        handler = lambda *a, **kw: MirrorHandler(*a, directory=str(root), **kw)  # noqa: E731
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.server.stall, self.server.stalled, self.server.release = set(), threading.Event(), threading.Event()
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.root = root
        self.base = "http://127.0.0.1:%d/" % self.server.server_address[1]
        self.url = self.base + "compute/cuda/redist/"

    def close(self):
        self.server.release.set()
        self.server.shutdown()
        self.server.server_close()


def driver_index(root: Path, releases: dict) -> Path:
    """`root` as a mirror root whose compute/cuda/redist holds one manifest per release with only
    the `nvidia_driver` entry NVIDIA's manifests carry (the bundled driver; None: no entry), as
    `facts refresh` reads them. {label: (release_date, driver)}."""
    base = root / "compute" / "cuda" / "redist"
    base.mkdir(parents=True)
    for label, (date, driver) in releases.items():
        items = {}
        if driver:
            path = "nvidia_driver/linux-x86_64/nvidia_driver-linux-x86_64-%s-archive.tar.xz" % driver
            items["nvidia_driver"] = {"name": "NVIDIA Linux Driver", "license": "NVIDIA Driver",
                                      "license_path": "nvidia_driver/LICENSE.txt", "version": driver,
                                      "linux-x86_64": {"relative_path": path, "sha256": "0" * 64, "md5": "0" * 32,
                                                       "size": "1"}}
        _manifest(base, label, date, "cuda", items)
    return root
