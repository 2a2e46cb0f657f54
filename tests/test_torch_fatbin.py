"""The fatbinary reader (cudaswitch/verify/fatbin.py) on real binaries: fatbinaries made here by a
real nvcc for chosen arches, and the real torch 2.14.1+cu130 (its installed libtorch_cuda.so and its
wheel file), checked against torch's own `torch._C._cuda_getArchFlags()`. Broken files are real
ones cut or overwritten at their headers (a damaged download, a hand-edited library)."""

import random
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from cudaswitch.verify import fatbin
from tests import kits
from tests.verify_support import torch_cuda_venv

KERNEL = "__global__ void scale(float *x) { x[threadIdx.x] *= 2.0f; }\n"
GENCODE = ["-gencode", "arch=compute_75,code=sm_75", "-gencode", "arch=compute_90,code=compute_90",
           "-gencode", "arch=compute_90a,code=sm_90a", "-gencode", "arch=compute_100f,code=sm_100f"]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """An object file and a shared library with fatbinaries for sm_75, sm_90a, sm_100f SASS and
    compute_90 PTX, compiled by the CUDA 13.0 nvcc of NVIDIA's wheels."""
    nvcc = kits.cuda13("13.0") / "bin" / "nvcc"
    work = tmp_path_factory.mktemp("fatbin")
    (work / "k.cu").write_text(KERNEL)
    proc = subprocess.run([str(nvcc), *GENCODE, "-Xcompiler", "-fPIC", "-c", "k.cu", "-o", "k.o"],
                          cwd=work, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    # linked by gcc: the bare wheel tree lacks the lib64/ nvcc's own link step looks in
    proc = subprocess.run([kits.require("gcc"), "-shared", "k.o", "-o", "libk.so"], cwd=work,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return work


def test_reads_back_the_arches_nvcc_was_asked_for(built):
    for name in ("k.o", "libk.so"):
        found = fatbin.read_path(built / name)
        assert found["sass"] == ["sm_75", "sm_90a", "sm_100f"], found
        assert found["ptx"] == ["compute_90"] and found["partial"] == [] and found["containers"] >= 1
        assert fatbin.arch_flags(found) == ["sm_75", "sm_90a", "sm_100f", "compute_90"]


def test_reads_a_wheel_as_a_stream(built, tmp_path):
    """A wheel-shaped zip whose torch/lib/libtorch_cuda.so is the nvcc-made library (deflated, as
    pip's wheels are): the same lists, and torch's release and CUDA from its torch/version.py."""
    wheel = tmp_path / "torch-9.9.0-cp311-cp311-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as out:
        out.write(built / "libk.so", fatbin.WHEEL_MEMBER)
        out.writestr("torch/version.py", "__version__ = '9.9.0+cu130'\ncuda: Optional[str] = '13.0'\n")
    found = fatbin.read_path(wheel)
    assert (found["torch"], found["cuda"], found["member"]) == ("9.9.0+cu130", "13.0", fatbin.WHEEL_MEMBER)
    assert fatbin.arch_flags(found) == ["sm_75", "sm_90a", "sm_100f", "compute_90"]


def test_damaged_files_are_one_clear_error(built, tmp_path):
    """A seeded corpus of 300 copies of the real object file with header bytes overwritten or the
    file cut short: each either reads or raises FatbinError (one line), never anything else."""
    data = (built / "k.o").read_bytes()
    start = data.find(fatbin.FATBIN_MAGIC.to_bytes(4, "little"))
    assert start > 0
    rng, target = random.Random(26), tmp_path / "bad.o"
    outcomes = {"read": 0, "refused": 0}
    for case in range(300):
        bad = bytearray(data)
        if case % 3 == 0:
            bad = bad[:rng.randrange(len(bad))]
        else:
            where = rng.choice([0x28, 0x3A, 0x3C, 0x3E, start, start + 8, start + 16, start + 24, start + 48])
            for i in range(rng.randrange(1, 9)):
                if where + i < len(bad):
                    bad[where + i] = rng.randrange(256)
        target.write_bytes(bytes(bad))
        try:
            fatbin.read_path(target)
            outcomes["read"] += 1
        except fatbin.FatbinError as exc:
            assert "\n" not in exc.message and str(target) in exc.message
            outcomes["refused"] += 1
    assert outcomes["refused"] > 100, outcomes


def test_not_elf_and_no_library(tmp_path):
    (tmp_path / "x.so").write_bytes(b"MZ not an ELF file")
    with pytest.raises(fatbin.FatbinError, match="not an ELF file"):
        fatbin.read_path(tmp_path / "x.so")
    with pytest.raises(fatbin.FatbinError, match="no libtorch_cuda.so"):
        fatbin.read_path(tmp_path)
    cpu = tmp_path / "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(cpu, "w") as out:
        out.writestr("torch/version.py", "__version__ = '2.13.0+cpu'\n")
    with pytest.raises(fatbin.FatbinError, match="not a CUDA build"):
        fatbin.read_path(cpu)


@pytest.fixture(scope="module")
def real_torch():
    """(torch package dir, its own arch flags) of the real CUDA build."""
    python = str(torch_cuda_venv() / "bin" / "python")
    out = subprocess.run([python, "-c", "import torch, os; print(os.path.dirname(torch.__file__)); "
                          "print(torch.__version__); print(torch._C._cuda_getArchFlags())"],
                         capture_output=True, text=True, timeout=300, cwd="/").stdout.split("\n")
    assert out[1].startswith("2.14.1+cu130"), out
    return Path(out[0]), out[2].split()


def test_installed_torch_equals_its_own_arch_flags(real_torch):
    directory, flags = real_torch
    for where in (directory, directory / "lib", directory / "lib" / "libtorch_cuda.so"):
        found = fatbin.read_path(where)
        assert fatbin.arch_flags(found) == flags, found
    assert found["partial"]  # a few kernels carry more (sm_90a, ...): listed apart, not as the build's


def _torch_wheel():
    """The torch 2.14.1 wheel file pip resolves with this machine's own configuration, kept once."""
    def download(tmp):
        proc = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "torch==2.14.1",
                               "-d", str(tmp)], capture_output=True, text=True, timeout=3600)
        if proc.returncode:
            kits._give_up("cannot download torch==2.14.1: %s" % proc.stderr[-500:])
    [wheel] = kits._cached("torch-wheel-2.14.1", download).glob("torch-2.14.1-*.whl")
    return wheel


def test_torch_wheel_equals_its_own_arch_flags_and_the_table(real_torch):
    """The wheel read as a stream (never unpacked) gives what the installed torch says of itself,
    and the table's 2.14 cu130 row is that wheel (same file name and sha256)."""
    import hashlib

    from cudaswitch.verify import facttables as facts

    wheel, (_, flags) = _torch_wheel(), real_torch
    found = fatbin.read_path(wheel)
    assert fatbin.arch_flags(found) == flags and found["torch"] == "2.14.1+cu130" and found["cuda"] == "13.0"
    [row] = [r for r in facts.torch_rows() if (r["torch"], r["cuda"]) == ("2.14", "13.0")]
    assert row["evidence"] == "wheel" and row["arch"] == flags and row["wheel"] == wheel.name
    assert row["sha256"] == hashlib.sha256(wheel.read_bytes()).hexdigest()


def test_the_refresh_tool_prints_a_row_the_loader_takes(built, tmp_path):
    """tools/torch_arch_from_wheel.py on a wheel-shaped zip: one [[build]] row with the wheel's file
    name and sha256, which the table's own loader accepts as `wheel` evidence."""
    import hashlib

    from cudaswitch.verify import facttables as facts

    wheel = tmp_path / "torch-9.9.0-cp311-cp311-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as out:
        out.write(built / "libk.so", fatbin.WHEEL_MEMBER)
        out.writestr("torch/version.py", "__version__ = '9.9.0+cu130'\ncuda = '13.0'\n")
    tool = Path(__file__).resolve().parent.parent / "tools" / "torch_arch_from_wheel.py"
    proc = subprocess.run([sys.executable, str(tool), str(wheel)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    [row] = facts.parse_torch_table('[sources]\nPyPI-wheel = "x"\n' + proc.stdout)["build"]
    assert (row["torch"], row["release"], row["cuda"], row["platform"]) == ("9.9", "9.9.0", "13.0", "linux-x86_64")
    assert row["arch"] == ["sm_75", "sm_90a", "sm_100f", "compute_90"] and row["wheel"] == wheel.name
    assert row["sha256"] == hashlib.sha256(wheel.read_bytes()).hexdigest()
    bad = subprocess.run([sys.executable, str(tool), str(tmp_path / "missing.whl")], capture_output=True, text=True,
                         timeout=60)
    assert bad.returncode == 1 and bad.stdout == "" and len(bad.stderr.strip().splitlines()) == 1


def test_a_damaged_or_encrypted_wheel_member_is_one_clear_error(built, tmp_path):
    """A download cut or flipped inside the deflated library (zlib's 'invalid code lengths set'),
    and a member whose header says encrypted (zipfile's RuntimeError): one FatbinError each."""
    wheel = tmp_path / "torch-9.9.0-cp311-cp311-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as out:
        out.write(built / "libk.so", fatbin.WHEEL_MEMBER)
    data = bytearray(wheel.read_bytes())
    start = data.index(fatbin.WHEEL_MEMBER.encode()) + len(fatbin.WHEEL_MEMBER)  # the local header's name
    data[start + 40:start + 80] = b"\xff" * 40  # inside the deflate stream
    damaged = tmp_path / "damaged.whl"
    damaged.write_bytes(bytes(data))
    data = bytearray(wheel.read_bytes())
    central = data.rindex(b"PK\x01\x02")
    data[central + 8] |= 1  # general purpose flag bit 0: encrypted
    encrypted = tmp_path / "encrypted.whl"
    encrypted.write_bytes(bytes(data))
    for path in (damaged, encrypted):
        with pytest.raises(fatbin.FatbinError, match="cannot read the wheel"):
            fatbin.read_path(path)
