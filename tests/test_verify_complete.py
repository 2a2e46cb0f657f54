""""Complete" means a one-kernel program compiles and links: copies of a real 13.1 toolkit each
missing one part of the compile pipeline (what a partial copy, a wheel set without nvidia-cuda-nvvm,
or a runtime package leaves) are not ok anywhere, nor is a venv of NVIDIA's 13.1 wheels, which
compiles but cannot link; the intact toolkit's first `use` builds a kernel for real, once."""

import os
import subprocess

import pytest

from tests import kits
from tests.verify_support import by_id, report

PARTS = {  # name in the verdict -> file(s) removed from a classic tree
    "nvvm/bin/cicc": ["nvvm/bin/cicc"],
    "bin/ptxas": ["bin/ptxas"],
    "bin/fatbinary": ["bin/fatbinary"],
    "bin/nvlink": ["bin/nvlink"],
    "include/crt/host_config.h": ["targets/x86_64-linux/include/crt/host_config.h"],
    "include/cuda_runtime.h": ["targets/x86_64-linux/include/cuda_runtime.h"],
    "libcudart": ["targets/x86_64-linux/lib/libcudart.so", "targets/x86_64-linux/lib/libcudart.so.13"],
}


def slug(part):
    return part.replace("/", "-").replace(".", "-")


@pytest.fixture(scope="module")
def partial_host(tmp_path_factory):
    from tests.conftest import Host

    base = tmp_path_factory.mktemp("complete")
    host = Host(base / "root", base / "work")
    src = kits.cuda13("13.1")
    for part, files in PARTS.items():
        root = kits.install_classic(src, host.path("/opt/cuda-no-" + slug(part)), "13.1")
        for rel in files:
            os.unlink(root / rel)  # a hardlink into the kit cache: unlinking leaves the cache whole
        if part == "libcudart":
            for lib in (root / "targets/x86_64-linux/lib").glob("libcudart.so.*"):
                os.unlink(lib)
    return host


def test_list_is_not_ok_and_names_the_missing_part(partial_host):
    items = partial_host.list_json()
    for part in PARTS:
        item = items[str(partial_host.path("/opt/cuda-no-" + slug(part)))]
        assert item["status"] == "incomplete", (part, item)
        assert any("cannot compile, missing: " + part in p for p in item["problems"]), (part, item["problems"])


@pytest.mark.parametrize("part", sorted(PARTS))
def test_verify_names_the_part_and_strict_use_refuses(partial_host, part):
    root = str(partial_host.path("/opt/cuda-no-" + slug(part)))
    proc = partial_host.run("verify", root, "--json", timeout=300)
    [status] = by_id(report(proc), "toolkit.status")
    assert proc.returncode == 1 and status["level"] == "error" and part in status["message"]
    assert status["facts"]["missing"] == [part]
    strict = partial_host.run("use", root, "--shell", "bash", "--strict", timeout=300)
    assert strict.returncode == 1 and strict.stdout == ""
    assert "refusing to switch (--strict)" in strict.stderr and part in strict.stderr


def test_a_venv_of_nvidias_13_1_wheels_compiles_but_cannot_link_so_it_is_not_ok(host, tmp_path):
    """Mirrors `pip install cuda-toolkit[nvcc,cudart]==13.1.*` in a venv (the real wheels, as pip lays
    them out): nvcc's stock profile links from nvidia/cu13/lib64, the wheels keep libcudart_static.a and
    libcudadevrt.a in lib/, so a plain `nvcc x.cu -o x` fails. list, verify and use say so, naming the
    libraries; the hint they give links; the complete 13.1 beside it stays ok."""
    kits.venv_with_wheels(host.path("/opt/venv"), "13.1")
    complete = str(kits.install_classic(kits.cuda13("13.1"), host.path("/usr/local/cuda-13.1"), "13.1"))
    wheels = kits.site_packages(host.path("/opt/venv")) / "nvidia/cu13"
    host.env["VIRTUAL_ENV"] = "/opt/venv"
    items = host.list_json()
    assert items[complete]["status"] == "ok" and items[complete]["problems"] == []
    [problem] = items[str(wheels)]["problems"]
    assert items[str(wheels)]["status"] == "incomplete" and problem.startswith("cannot link: "), problem
    assert "libcudadevrt.a or libcudart_static.a" in problem and "-L%s/lib" % wheels in problem

    proc = host.run("verify", "pip:13.1", "--json", timeout=300)
    [status], [build] = by_id(report(proc), "toolkit.status"), by_id(report(proc), "nvcc.compile")
    assert proc.returncode == 1 and status["level"] == "warning" and build["level"] == "error"
    assert "compiles but cannot link: -lcudadevrt, -lcudart_static not found" in build["message"]
    assert "-L%s/lib" % wheels in build["hint"] and build["facts"]["command"] == "nvcc smoke.o -o smoke"
    use = host.run("use", "pip:13.1", "--shell", "bash", timeout=300)
    assert use.returncode == 0 and "error: compiles but cannot link: -lcudadevrt, -lcudart_static" in use.stderr

    (tmp_path / "k.cu").write_text("__global__ void k() {}\nint main() { k<<<1, 1>>>(); return 0; }\n")
    nvcc = [str(wheels / "bin/nvcc"), "k.cu", "-o", "k"]
    plain = subprocess.run(nvcc, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert plain.returncode != 0 and "cannot find -lcudart_static" in plain.stderr  # what verify said
    hinted = subprocess.run(nvcc + ["-L%s/lib" % wheels], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert hinted.returncode == 0, hinted.stderr

    [good] = by_id(report(host.run("verify", complete, "--json", timeout=300)), "nvcc.compile")
    assert good["level"] == "ok" and "compiles and links" in good["message"], good


NVCC_LOGGER = """#!/bin/sh
echo "$*" >> {log}
exec "$(dirname "$0")/nvcc.real" "$@"
"""


@pytest.fixture
def logged_nvcc(host, tmp_path):
    """An intact 13.1 whose bin/nvcc is a wrapper logging every call (the real nvcc beside it)."""
    root = kits.install_classic(kits.cuda13("13.1"), host.path("/usr/local/cuda-13.1"), "13.1")
    log = tmp_path / "nvcc.log"
    os.rename(root / "bin/nvcc", root / "bin/nvcc.real")
    (root / "bin/nvcc").write_text(NVCC_LOGGER.format(log=log))
    (root / "bin/nvcc").chmod(0o755)
    host.env["CUDASWITCH_PROBE_LOG"] = str(tmp_path / "probes.log")
    return host, log, tmp_path / "probes.log"


def builds(log):
    return [l for l in log.read_text().splitlines() if l.startswith("-c ")] if log.exists() else []


def lines(path):
    return path.read_text().splitlines() if path.exists() else []


def test_first_use_builds_once_and_ten_more_switches_start_no_process(logged_nvcc):
    host, log, probes = logged_nvcc
    first = host.run("use", "13.1", "--shell", "bash", timeout=300)
    assert first.returncode == 0, first.stderr
    assert builds(log) == ["-c smoke.cu -o smoke.o"], log.read_text()
    assert any(l.startswith("smoke.o -o smoke") for l in lines(log))  # and linked
    assert "builds with nvcc" in first.stderr, first.stderr
    seen_nvcc, seen_probes = lines(log), lines(probes)
    for _ in range(10):
        again = host.run("use", "13.1", "--shell", "bash")
        assert again.returncode == 0 and again.stderr == first.stderr
    assert lines(log) == seen_nvcc and lines(probes) == seen_probes


def test_cached_verdict_starts_no_process_in_process(logged_nvcc, monkeypatch):
    """The same, with every way of starting a process refused."""
    from cudaswitch.registry import discover
    from cudaswitch.paths import Paths
    from cudaswitch.registry.resolve import resolve
    from cudaswitch.switch.plan import plan
    from cudaswitch.verify.quick import verdict_for_use

    host, log, _ = logged_nvcc
    paths = Paths(host.env)
    record = resolve(discover.load(paths, host.env), "13.1")
    new_env = plan(host.env, record, "shell", paths=paths).env
    first = verdict_for_use(paths, record, new_env)
    assert len(builds(log)) == 1

    def refuse(*args, **kwargs):
        raise AssertionError("a cached verdict started a process: %r" % (args[:1],))

    for name in ("Popen",):
        monkeypatch.setattr(subprocess, name, refuse)
    for name in ("posix_spawn", "fork", "execv", "execve"):
        monkeypatch.setattr(os, name, refuse)
    for _ in range(10):
        assert verdict_for_use(paths, record, plan(host.env, record, "shell", paths=paths).env) == first
