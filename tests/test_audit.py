"""`cudaswitch audit --root`: the inventory of an image's root built from real toolkits (kits.py),
checked the way an admin would check it: against `du -sb`, the wheels' own versions, and nvcc."""

import json
import os
from pathlib import Path

import pytest

from tests import kits
from tests.audit_support import build_image, du_sb, set_version_json, wheel_versions, write_driver
from tests.conftest import Host


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    base = tmp_path_factory.mktemp("audit-image")
    (base / "root").mkdir()
    build_image(base / "root", "node01")
    return Host(base / "root", base / "work")


def audit_json(host, *args):
    proc = host.run("audit", "--json", "--root", str(host.root), *args, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_audit_root_reports_each_toolkit_exactly(image):
    report = audit_json(image)
    by_root = {Path(t["root"]).relative_to(image.root).as_posix(): t for t in report["toolkits"]}
    assert sorted(by_root) == sorted(["usr/local/cuda-13.0", "usr/local/cuda-13.1", "opt/cuda-13.1-copy",
                                      "usr/local/cuda-12.4", "opt/conda/envs/cu13", "usr/local/cuda-12.9",
                                      "usr/local/cuda-11.0"])
    assert report["host"] == "node01" and report["root"] == str(image.root) and report["executed"] is False
    assert (report["driver"]["release"], report["driver"]["cuda"]) == ("575.51.03", "12.9")
    assert report["gpus"] == [{"model": "NVIDIA H200", "bus": "0000:01:00.0"}]

    nvcc130, cudart130 = wheel_versions("13.0")
    nvcc131, cudart131 = wheel_versions("13.1")
    for name, nvcc, cudart in (("usr/local/cuda-13.1", nvcc131, cudart131), ("opt/cuda-13.1-copy", nvcc131, cudart131),
                               ("usr/local/cuda-13.0", nvcc130, cudart130),
                               ("opt/conda/envs/cu13", nvcc130, cudart130)):
        entry = by_root[name]
        assert (entry["version"], entry["status"], entry["problems"]) == (nvcc, "ok", []), name
        assert entry["components"] == {"cudart": cudart, "nvcc": nvcc, "cudnn": None, "nccl": None,
                                       "cupti": None, "cublas": None}, name
        # a 575 driver supports CUDA 12.9 (compat.toml driver_minimum): too old for 13.x;
        # minor-version compatibility stays within a major
        assert entry["driver_supported"] is False and entry["driver_check"]["level"] == "error"
        minimum = {"13.0": "580.65.06", "13.1": "590.44.01"}[entry["short"]]  # compat.toml driver_minimum
        assert "12.9" in entry["driver_check"]["message"] and minimum in entry["driver_check"]["hint"]
    assert by_root["opt/conda/envs/cu13"]["sources"] == ["conda"]
    assert by_root["usr/local/cuda-13.1"]["system_default"] is True
    assert [t["root"] for t in report["toolkits"] if t["system_default"]] == [str(image.root / "usr/local/cuda-13.1")]
    assert by_root["usr/local/cuda-13.1"]["duplicates"] == [str(image.root / "opt/cuda-13.1-copy")]

    runtime = by_root["usr/local/cuda-12.4"]
    assert (runtime["version"], runtime["status"], runtime["nvcc"]) == ("12.4.131", "incomplete", None)
    assert runtime["components"]["cudart"] == "12.4.127" and runtime["components"]["nvcc"] is None
    assert "no nvcc" in runtime["problems"][0] and runtime["driver_supported"] is True

    dangling, empty = by_root["usr/local/cuda-12.9"], by_root["usr/local/cuda-11.0"]
    assert (dangling["status"], dangling["version"]) == ("broken", None)
    assert dangling["problems"] == ["dangling link: missing: /usr/local/cuda-12.9.28"]
    assert (empty["status"], empty["version"]) == ("broken", None)
    assert "empty directory" in empty["problems"][0]

    for name, entry in by_root.items():
        if name != "usr/local/cuda-12.9":
            assert abs(entry["size_bytes"] - du_sb(image.root / name)) <= du_sb(image.root / name) / 100, name
    assert dangling["size_bytes"] == len("/usr/local/cuda-12.9.28")  # the link itself, as du -sb says

    checks = {(c["id"], c["level"], c["facts"].get("root") or c["facts"].get("version")) for c in report["checks"]}
    assert ("toolkit.duplicate", "warning", nvcc131) in checks
    assert ("toolkit.duplicate", "info", nvcc130) in checks  # a conda env beside a system install
    assert ("toolkit.broken", "error", str(image.root / "usr/local/cuda-12.9")) in checks
    assert ("driver.supports_toolkit", "error", str(image.root / "usr/local/cuda-13.0")) in checks


def test_audit_root_table_sorted_by_version_with_problems(image):
    proc = image.run("audit", "--root", str(image.root))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("host node01") and "575.51.03 (CUDA 12.9)" in lines[0] and "NVIDIA H200" in lines[0]
    header = next(i for i, line in enumerate(lines) if line.startswith("VERSION"))
    rows = [line.split()[0] for line in lines[header + 1:] if not line.startswith(("error:", "warning:", "info:", " "))]
    assert rows == ["13.1.115", "13.1.115", "13.0.88", "13.0.88", "12.4.131", "?", "?"]
    assert any("error:" in line and "dangling link" in line for line in lines)
    assert proc.stderr == ""  # not a terminal: no progress bar


def marker_script(path: Path, marker: Path, output=""):
    """An executable that leaves `marker` when run (an image's binaries, built for another host,
    would likewise do something unwanted here)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)  # a fresh file: never write through a hardlink into the kit cache
    path.write_text("#!/bin/sh\ntouch %s\necho '%s'\n" % (marker, output))
    path.chmod(0o755)


def test_audit_root_runs_nothing_from_the_image_unless_exec(host):
    """The image's nvcc, and the tools an audit could be tempted to ask (the image's nvidia-smi,
    conda, Lmod's spider), are scripts that leave a marker when run."""
    host.work.mkdir()
    kits.install_classic(kits.cuda13("13.1"), host.root / "usr/local/cuda-13.1", "13.1")
    kits.conda_env(host.root / "opt/conda/envs/cu13", "cuda-nvcc-13")
    nvcc_ran, other_ran = host.work / "nvcc-was-run", host.work / "image-tool-was-run"
    marker_script(host.root / "usr/local/cuda-13.1/bin/nvcc", nvcc_ran,
                  "Cuda compilation tools, release 13.1, V13.1.115")
    for tool in ("usr/bin/nvidia-smi", "opt/conda/bin/conda", "usr/share/lmod/lmod/libexec/spider"):
        marker_script(host.root / tool, other_ran)
    report = audit_json(host)
    assert not nvcc_ran.exists() and not other_ran.exists()
    by_root = {Path(t["root"]).relative_to(host.root).as_posix(): t for t in report["toolkits"]}
    assert by_root["usr/local/cuda-13.1"]["version"] == "13.1.115"  # read from the script's bytes
    assert by_root["opt/conda/envs/cu13"]["status"] == "ok"
    report = audit_json(host, "--exec")
    assert nvcc_ran.exists() and report["executed"] is True
    assert not other_ran.exists()  # --exec is about toolkits' nvcc; the image's driver tools stay unrun


def test_nvcc_disagreeing_with_version_json_is_broken_with_and_without_exec(host):
    """Mirrors a toolkit dir whose bin/ was overwritten by another release's installer."""
    root = host.root / "usr/local/cuda-13.0"
    kits.install_classic(kits.cuda13("13.1"), root, "13.1")
    nvcc131, _ = wheel_versions("13.1")
    set_version_json(root, sdk="13.0.0", cuda_nvcc="13.0.88", cuda_cudart="13.0.96")
    for args, said in (((), "nvcc's binary says"), (("--exec",), "nvcc reports")):
        entry = audit_json(host, *args)["toolkits"][0]
        assert entry["status"] == "broken", args
        assert entry["problems"] == ["%s %s but the toolkit's files say 13.0.88" % (said, nvcc131)]
        assert entry["components"]["nvcc"] == nvcc131


def test_compile_marks_which_toolkits_compile(host):
    kits.require("gcc")
    kits.install_classic(kits.cuda13("13.1"), host.root / "usr/local/cuda-13.1", "13.1")
    kits.install_classic_runtime12(host.root / "usr/local/cuda-12.4")
    strict = kits.install_classic(kits.cuda13("13.0"), host.root / "usr/local/cuda-13.0", "13.0")
    # Mirrors a toolkit older than every gcc here: its host_config.h refuses gcc > 10, and no g++-10
    # is installed, so the compiler `use` would pick cannot save it either (the build runs in the
    # switch plan's environment; tests/test_switch_plan.py has the case g++-11 saves).
    header = kits.detach(strict / "targets/x86_64-linux/include/crt/host_config.h")
    header.write_text(header.read_text().replace("#if __GNUC__ > 15", "#if __GNUC__ > 10"))
    refused = host.run("audit", "--json", "--root", str(host.root), "--compile")
    assert refused.returncode == 2 and "--exec" in refused.stderr and refused.stdout == ""
    by_version = {t["short"]: t for t in audit_json(host, "--compile", "--exec")["toolkits"]}
    assert by_version["13.1"]["compiles"] is True
    assert by_version["13.0"]["compiles"] is False
    assert "unsupported GNU version" in by_version["13.0"]["compile_error"]
    assert by_version["12.4"]["compiles"] is False and by_version["12.4"]["compile_error"] == "no nvcc"
    assert all(t["compiles"] is None for t in audit_json(host)["toolkits"])


def test_audit_root_that_is_not_a_directory(host):
    proc = host.run("audit", "--root", str(host.root / "nope"))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().count("\n") == 0 and "is not a directory" in proc.stderr


def test_audit_of_this_host_names_modules_and_conda_envs(standard_host):
    """Without --root the audit is of the host as `list` sees it (here the standard host through
    CUDASWITCH_ROOT): Lmod's cuda/13.1 and the conda env are named where they point."""
    kits.require("lmod")
    proc = standard_host.run("audit", "--json", timeout=300)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["executed"] is True
    by_root = {Path(t["root"]).relative_to(standard_host.root).as_posix(): t for t in report["toolkits"]}
    assert by_root["usr/local/cuda-13.1"]["origins"]["module"] == "cuda/13.1"
    assert by_root["usr/local/cuda-13.0"]["system_default"] is True
    conda = by_root["home/tester/miniconda3/envs/cu13"]
    assert conda["sources"] == ["conda"] and conda["layout"] == "conda"
    venv_cu13 = kits.site_packages(standard_host.path("/opt/venv")) / "nvidia/cu13"
    assert by_root[venv_cu13.relative_to(standard_host.root).as_posix()]["sources"] == ["pip"]
    table = standard_host.run("audit").stdout
    assert "module cuda/13.1" in table


def test_driver_support_through_minor_version_compatibility(host):
    """A 580.65.06 driver (CUDA 13.0) runs 13.1 code through minor-version compatibility: the
    audit says yes, with NVIDIA's caveat, and raises no check for it."""
    kits.install_classic(kits.cuda13("13.1"), host.root / "usr/local/cuda-13.1", "13.1")
    write_driver(host.root, "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65.06  Release Build\n")
    report = audit_json(host)
    entry = report["toolkits"][0]
    assert entry["driver_supported"] is True and "minor-version compatibility" in entry["driver_check"]["message"]
    assert not [c for c in report["checks"] if c["id"].startswith("driver.")]


def test_audit_root_reads_the_images_modulefiles_as_text_and_runs_none(host, tmp_path):
    """An image's /opt/modulefiles/cuda/13.1.lua names /usr/local/cuda-13.1 as the image sees it,
    in the shape sites write (`local root = [[...]]`, pathJoin); a Tcl cuda/12.4 (Environment
    Modules' format) names the image's /sw/cuda/12.4 through `set root`. Both also run a command when
    evaluated, as any modulefile may: Lmod's spider runs `os.execute` and tclsh runs `exec` (both seen
    with this host's Lmod), so without --exec the audit reads the text and runs neither."""
    canary = tmp_path / "canary"
    lmod = kits.lmod_env(host.root / "opt/modulefiles")
    kits.install_classic(kits.cuda13("13.1"), host.root / "usr/local/cuda-13.1", "13.1")
    kits.install_classic_runtime12(host.root / "sw/cuda/12.4")
    lua = kits.write_cuda_module(host.root / "opt/modulefiles", "13.1", "/usr/local/cuda-13.1")
    lua.write_text('os.execute("echo lua >> %s")\n' % canary + lua.read_text())
    (host.root / "opt/modulefiles/cuda/12.4").write_text(
        "#%%Module1.0\nexec sh -c {echo tcl >> %s}\nset root /sw/cuda/12.4\n"
        "prepend-path PATH $root/bin\nprepend-path LD_LIBRARY_PATH ${root}/lib64\n" % canary)
    proc = host.run("audit", "--json", "--root", str(host.root), env={**lmod, "MODULEPATH": "/opt/modulefiles"})
    assert proc.returncode == 0, proc.stderr
    assert not canary.exists(), "a modulefile of the image ran: " + canary.read_text()
    toolkits = json.loads(proc.stdout)["toolkits"]
    by_version = {t["version"][:4]: t for t in toolkits}
    assert by_version["13.1"]["sources"] == ["system", "module"], toolkits
    assert by_version["13.1"]["origins"]["module"] == "cuda/13.1"
    assert "module" in by_version["12.4"]["sources"] and by_version["12.4"]["origins"]["module"] == "cuda/12.4"


def test_audit_root_survives_hostile_modulefiles(host):
    """An image's modulefiles are a stranger's files: pathJoin nested 1,000 deep, 256 KiB of blank
    lines, a line of 100,000 spaces inside a call, 30,000 option words, a FIFO and binary data
    named like modulefiles. The audit answers, in seconds and without a traceback, and still reads
    the one good modulefile beside them."""
    kits.install_classic(kits.cuda13("13.1"), host.root / "usr/local/cuda-13.1", "13.1")
    cuda = host.root / "opt/modulefiles/cuda"
    kits.write_cuda_module(host.root / "opt/modulefiles", "13.1", "/usr/local/cuda-13.1")
    (cuda / "1.lua").write_text("local a = " + "pathJoin(" * 1000 + '"/x"' + ")" * 1000 + '\nprepend_path("PATH", a)\n')
    (cuda / "2.lua").write_text("\n" * 200_000 + " " * 50_000 + "x\n")
    (cuda / "3.lua").write_text('prepend_path("PATH", "' + " " * 100_000 + 'x)\n')
    (cuda / "4").write_text("#%Module\nprepend-path " + "-x " * 30_000 + "PATH /a/bin\n")
    os.mkfifo(cuda / "5.lua")
    (cuda / "6.lua").write_bytes(bytes(range(256)) * 64)
    proc = host.run("audit", "--json", "--root", str(host.root), env={"MODULEPATH": "/opt/modulefiles"}, timeout=60)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    (entry,) = [t for t in json.loads(proc.stdout)["toolkits"] if (t["version"] or "").startswith("13.1")]
    assert entry["origins"]["module"] == "cuda/13.1"
