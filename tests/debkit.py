"""A real CUDA 11.8 nvcc for tests, from Debian's own packages (the only registry this machine
reaches that carries an nvcc older than 13: NVIDIA's CUDA 11/12 wheels hold ptxas but no nvcc).

Debian bookworm's non-free component packages NVIDIA's 11.8 binaries unchanged as
`nvidia-cuda-toolkit` 11.8.89~11.8.0-5~deb12u1 (nvcc, cicc, ptxas, fatbinary, nvlink, cudafe++,
bin2c, crt/link.stub) and `nvidia-cuda-dev` (headers and libraries; 774 MB, of which only the
static device runtime, static cudart and culibos are kept). The apt run here is private: its own
sources list (bookworm non-free only), state and cache dirs under the kit's temp dir, download
only; nothing is installed and the machine's apt setup is untouched.

The kit is ``cache_dir()/deb-cuda-11.8.89``, built once per machine under kits' lock, holding
``toolkit/`` (nvidia-cuda-toolkit's files, as dpkg-deb lays them out) and ``lib/`` (the three
static libraries from nvidia-cuda-dev).
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests import kits

SUITE = "bookworm"
VERSION = "11.8.89~11.8.0-5~deb12u1"
PACKAGES = ("nvidia-cuda-toolkit", "nvidia-cuda-dev")
STATIC_LIBS = ("libcudadevrt.a", "libcudart_static.a", "libculibos.a")
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
APT_TIMEOUT = 900  # 860 MB of packages on a slow link

_FAILED: list[str] = []  # one failed build per process, not one per test


def _apt_options(work: Path) -> list[str]:
    sources = work / "sources.list"
    sources.write_text(f"deb [signed-by={KEYRING}] http://deb.debian.org/debian {SUITE} non-free\n")
    for sub in ("state/lists/partial", "cache/archives/partial"):
        (work / sub).mkdir(parents=True, exist_ok=True)
    return ["-o", f"Dir::Etc::sourcelist={sources}", "-o", "Dir::Etc::sourceparts=/nonexistent",
            "-o", f"Dir::State={work / 'state'}", "-o", f"Dir::Cache={work / 'cache'}",
            "-o", "Dir::State::status=/dev/null", "-o", "APT::Sandbox::User=root", "-qq"]


def _run(cmd, cwd=None) -> None:
    try:
        done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=APT_TIMEOUT, cwd=cwd)
    except subprocess.TimeoutExpired:
        raise kits.KitUnavailable(f"{cmd[0]} timed out after {APT_TIMEOUT}s") from None
    if done.returncode:
        said = (done.stderr or done.stdout).strip()[-800:]
        raise kits.KitUnavailable(f"{' '.join(map(str, cmd[:2]))} failed: {said}")


def _extract(deb: Path, dest: Path, members: list[str]) -> None:
    """Only `members` of a .deb's data, flat into dest (the whole 2.8 GB tree is never written)."""
    unpack = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE)
    try:
        done = subprocess.run(["tar", "-x", "-C", str(dest), "--strip-components=4", *members],
                              stdin=unpack.stdout, capture_output=True, text=True, timeout=APT_TIMEOUT)
    finally:
        unpack.stdout.close()
        unpack.kill()
        unpack.wait()
    if done.returncode or sorted(p.name for p in dest.iterdir()) != sorted(Path(m).name for m in members):
        raise kits.KitUnavailable(f"{deb.name} did not hold {members}: {done.stderr.strip()[-400:]}")


def _build(tmp: Path) -> None:
    for tool in ("apt-get", "dpkg-deb", "tar"):
        if not shutil.which(tool):
            raise kits.KitUnavailable(f"{tool} is not installed (the CUDA 11.8 kit comes from Debian's packages)")
    work = tmp / ".apt"
    work.mkdir()
    options = _apt_options(work)
    _run(["apt-get", *options, "update"])
    _run(["apt-get", *options, "download", *(f"{p}={VERSION}" for p in PACKAGES)], cwd=work)
    [toolkit_deb] = work.glob("nvidia-cuda-toolkit_*.deb")
    [dev_deb] = work.glob("nvidia-cuda-dev_*.deb")
    _run(["dpkg-deb", "-x", toolkit_deb, tmp / "toolkit"])
    (tmp / "lib").mkdir()
    _extract(dev_deb, tmp / "lib", [f"./usr/lib/x86_64-linux-gnu/{name}" for name in STATIC_LIBS])
    shutil.rmtree(work)
    nvcc = tmp / "toolkit/usr/lib/nvidia-cuda-toolkit/bin/nvcc"
    kits._expect_release(nvcc, "11.8")


def cuda118() -> Path:
    """The kit dir (``toolkit/usr/...`` and ``lib/``); when it cannot be built: fail under CI=true,
    else skip."""
    if not _FAILED:
        try:
            return kits._cached("deb-cuda-11.8.89", _build)
        except kits.KitUnavailable as e:
            _FAILED.append(str(e))
    kits._give_up(_FAILED[0])
