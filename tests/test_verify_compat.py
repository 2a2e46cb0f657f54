"""compat.toml and torch_builds.toml: every row names a source of sources.toml, and where the host
can answer (host_config.h of the real 13.0 and 13.1 toolkits, the real CUDA wheel), the tables
agree with it."""

import pytest

from tests import kits

TABLES = ("driver_minimum", "minor_compat", "gcc_ceiling", "arch", "error")


def test_every_row_has_a_known_source():
    from cudaswitch.verify import facttables as facts

    data, sources = facts.load(), facts.tables()["sources"]
    for name in TABLES:
        assert data[name], name
        for row in data[name]:
            assert row["source"] in sources, (name, row)
    for row in facts.torch_table()["build"]:
        assert row["source"] in sources, row


@pytest.mark.slow  # a fresh machine pip-installs the 5.5 GB wheel first: the fast tier installs nothing
def test_torch_build_rows_agree_with_the_real_cuda_wheel():
    """Where a real build is at hand the host answers: torch 2.14.1's default Linux wheel (the one
    `pip install torch` gives) is built with CUDA 13.0, and the 2.14 row must list that variant."""
    import subprocess

    from cudaswitch.verify import facttables as facts
    from tests.verify_support import torch_cuda_venv

    python = torch_cuda_venv() / "bin" / "python"
    probe = "import torch; print(torch.__version__, torch.version.cuda)"
    version, cuda = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, timeout=300,
                                   check=True).stdout.split()
    variants, _ = facts.torch_variants(version)
    assert cuda in variants, (version, cuda, variants)


@pytest.mark.parametrize("minor", ["13.0", "13.1"])
def test_gcc_ceiling_table_agrees_with_the_real_host_config(minor, tmp_path):
    from cudaswitch.switch import plan
    from cudaswitch.verify import facttables as facts

    root = kits.install_classic(kits.cuda13(minor), tmp_path / ("cuda-" + minor), minor)
    record = {"root": str(root), "lib_dirs": [str(root / "lib64")]}
    from_host, path = plan.gcc_ceiling(record)
    assert path and from_host == facts.gcc_ceiling(minor + ".0")[0] == 15


def test_driver_table_lookups():
    from cudaswitch.verify import facttables as facts

    assert facts.driver_cuda("535.129.03")["cuda"] == "12.2"
    assert facts.driver_cuda("580.65.06")["cuda"] == "13.0"
    assert facts.driver_cuda("390.1")["cuda"] == "9.0"  # 9.1 needs 390.46
    assert facts.driver_cuda("375.26")["cuda"] is None  # older than every row (9.0: 384.81)
    assert facts.driver_minimum("12.4.131")["driver"] == "550.54.14"


def test_arch_table_first_and_last_cuda():
    """The arch table as Clang's MinVersionForOffloadArch gives it, with 13.0 dropping Maxwell..Volta."""
    from cudaswitch.verify import facttables as facts

    spans = {sm: (facts.arch_row(sm)["first"], facts.arch_row(sm)["last"]) for sm in
             ("sm_52", "sm_61", "sm_70", "sm_72", "sm_75", "sm_89", "sm_101", "sm_110")}
    assert spans == {"sm_52": ("7.0", "12.9"), "sm_61": ("8.0", "12.9"), "sm_70": ("9.0", "12.9"),
                     "sm_72": ("9.1", "12.9"), "sm_75": ("10.0", ""), "sm_89": ("11.8", ""),
                     "sm_101": ("12.8", "12.9"), "sm_110": ("13.0", "")}


def test_cudnn_version_encodings():
    """torch.backends.cudnn.version(): v8 is M*1000+m*100+p, v9 on M*10000+m*100+p (9.10 needs it)."""
    from cudaswitch.verify import facttables as facts

    assert [facts.cudnn_version_string(v) for v in (7605, 8907, 90100, 91000, None)] == \
        ["7.6.5", "8.9.7", "9.1.0", "9.10.0", None]
