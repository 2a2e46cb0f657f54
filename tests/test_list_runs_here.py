"""`list` says what runs here: beside every toolkit, whether this host's driver runs it, from the
same check `verify` makes (driver.supports_toolkit), cached by the driver's identity so a warm
`list` starts no process. Drivers are libcuda stand-ins with the release in /proc/driver/nvidia
(R550 for CUDA 12.4, R570 for 12.8, R580 for 13.0: minor-version compatibility needs 525.60.13 for
12.x and 580 for 13.x)."""

import json

import pytest

from tests.verify_support import build_libcuda, by_id, report, write_proc_version

TOOLKITS = ("11.8", "12.2", "12.4", "12.8", "12.9", "13.0", "13.1")
DRIVERS = {"12.4": (12040, "550.54.15"), "12.8": (12080, "570.86.10"), "13.0": (13000, "580.65.06")}


def runtime_toolkit(root, short):
    """A runtime-only /usr/local/cuda-X.Y (what a cuda-runtime package leaves): version.json, the
    runtime header and libcudart, no nvcc. The driver's verdict depends only on its CUDA version."""
    full = short + ".0"
    major, minor = (int(p) for p in short.split("."))
    (root / "include").mkdir(parents=True)
    (root / "include/cuda_runtime_api.h").write_text("#define CUDART_VERSION %d\n" % (major * 1000 + minor * 10))
    (root / "lib64").mkdir()
    (root / "lib64" / ("libcudart.so." + full)).write_bytes(b"\x7fELF")
    (root / "version.json").write_text(json.dumps({"cuda": {"version": full}, "cuda_cudart": {"version": full}}))


@pytest.fixture
def toolkits(host):
    for short in TOOLKITS:
        runtime_toolkit(host.path("/usr/local/cuda-%s" % short), short)
    return host


def drive(host, tmp_path, cuda):
    value, release = DRIVERS[cuda]
    write_proc_version(host.root, release)
    return {"CUDASWITCH_LIBCUDA": str(build_libcuda(tmp_path / cuda, value, init_rc=0, gpus=["sm_86"])),
            "CUDASWITCH_PROBE_LOG": str(tmp_path / ("probes-%s.log" % cuda))}


@pytest.mark.parametrize("cuda", sorted(DRIVERS))
def test_the_column_is_verifys_driver_check(toolkits, tmp_path, cuda):
    host = toolkits
    env = drive(host, tmp_path, cuda)
    listed = {i["short"]: i["runs_here"] for i in json.loads(host.run("list", "--json", env=env, check=True).stdout)}
    assert sorted(listed) == sorted(TOOLKITS)
    for short in TOOLKITS:
        root = str(host.path("/usr/local/cuda-%s" % short))
        [check] = by_id(report(host.run("verify", root, "--json", env=env, timeout=300)), "driver.supports_toolkit")
        expected = {"error": "no", "info": "cannot tell"}.get(check["level"]) or (
            "minor-compat" if check["facts"].get("minor_version_compatibility") else "ok")
        assert listed[short]["runs"] == expected, (cuda, short, listed[short], check)
    # and the rule itself, as a user reads it: a 12.4 driver runs 12.8 by minor-version
    # compatibility but never 13.x; a 13.0 driver runs everything up to 13.0
    assert (listed["13.1"]["runs"], listed["11.8"]["runs"]) == ("no" if cuda != "13.0" else "minor-compat", "ok")


def test_warm_list_starts_no_process_and_runnable_filters(toolkits, tmp_path):
    host = toolkits
    env = drive(host, tmp_path, "12.4")
    host.run("list", env=env, check=True)
    log = tmp_path / "probes-12.4.log"
    probes = log.read_text()
    assert "driver_probe" in probes
    table = host.run("list", env=env, check=True)
    assert log.read_text() == probes  # the second list asked no driver
    rows = {line.split()[-1]: line.split() for line in table.stdout.splitlines()[1:]}
    assert rows[str(host.path("/usr/local/cuda-13.0"))][2] == "no"
    assert "needs driver 580" in table.stderr
    runnable = host.run("list", "--runnable", "--json", env=env, check=True)
    assert sorted(i["short"] for i in json.loads(runnable.stdout)) == ["11.8", "12.2", "12.4", "12.8", "12.9"]
    upgraded = drive(host, tmp_path, "13.0")  # a driver upgrade: asked again
    upgraded["CUDASWITCH_PROBE_LOG"] = str(log)
    after = json.loads(host.run("list", "--json", env=upgraded, check=True).stdout)
    assert log.read_text() != probes and {i["short"]: i["runs_here"]["runs"] for i in after}["13.0"] == "ok"


def complete_toolkit(root, short, patch):
    """A complete-looking /usr/local/cuda-X.Y: every part of the compile pipeline in place and an nvcc
    that reports its release as the real one does (`nvcc --version`'s last lines). What the choice
    below reads is its status and version; the 13.x toolkits of these tests are real ones."""
    full = "%s.%s" % (short, patch)
    runtime_toolkit(root, short)
    (root / "bin").mkdir()
    (root / "bin/nvcc").write_text("#!/bin/sh\necho 'Cuda compilation tools, release %s, V%s'\necho 'Build cuda_%s'\n"
                                   % (short, full, short))
    for tool in ("bin/nvcc", "bin/ptxas", "bin/fatbinary", "bin/nvlink", "nvvm/bin/cicc"):
        path = root / tool
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            path.write_text("#!/bin/sh\nexit 0\n")
        path.chmod(0o755)
    (root / "include/crt").mkdir()
    (root / "include/crt/host_config.h").write_text("#if __GNUC__ > 13\n#error -- unsupported GNU version!\n#endif\n")
    (root / "include/cuda_runtime.h").write_text('#include "cuda_runtime_api.h"\n')
    (root / "lib64/libcudart.so").symlink_to("libcudart.so.%s.0" % short)


def test_a_partial_request_prefers_what_the_driver_runs(host, tmp_path):
    """A workstation with an R570 driver (CUDA 12.8) after `apt install cuda-toolkit-13-0
    cuda-toolkit-13-1` beside an older 12.9: the driver runs no 13.x, so `use latest` and
    `use '>=12'` take 12.9 and name each newer one with the driver's reason; an exact request still
    gets 13.1 (with the driver error in its verdict)."""
    from tests import kits

    complete_toolkit(host.path("/usr/local/cuda-12.9"), "12.9", "86")
    kits.install_classic(kits.cuda13("13.0"), host.path("/usr/local/cuda-13.0"), "13.0")
    kits.install_classic(kits.cuda13("13.1"), host.path("/usr/local/cuda-13.1"), "13.1")
    env = drive(host, tmp_path, "12.8")
    for request in ("latest", ">=12"):
        proc = host.run("use", request, "--shell", "json", "--no-verify", env=env)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["set"]["CUDA_HOME"] == str(host.path("/usr/local/cuda-12.9"))
        named = [l for l in proc.stderr.splitlines() if "this driver does not run it" in l]
        assert len(named) == 2 and "needs driver" in named[0], proc.stderr
    picked = {i["short"]: i["picked_by"] for i in json.loads(host.run("list", "--json", env=env, check=True).stdout)}
    assert picked == {"12.9": ["12", "latest"], "13.0": [], "13.1": ["13"]}  # what `use` would take, said by list
    exact = host.run("use", "13.1", "--shell", "json", env=env)
    assert json.loads(exact.stdout)["set"]["CUDA_HOME"] == str(host.path("/usr/local/cuda-13.1"))
    assert "driver supports CUDA 12.8 only" in exact.stderr
    # nothing it could run: the newest complete one, as before
    alone = host.run("use", "13", "--shell", "json", "--no-verify", env=env)
    assert json.loads(alone.stdout)["set"]["CUDA_HOME"] == str(host.path("/usr/local/cuda-13.1"))


def test_a_12_2_driver_runs_12_x_by_minor_version_compatibility(host, tmp_path):
    """R535 (CUDA 12.2) with complete 12.4 and 12.9: both run through minor-version compatibility
    (535 is above 12.x's 525.60.13 floor), so `use 12` takes the newest, 12.9, passing nothing over."""
    complete_toolkit(host.path("/usr/local/cuda-12.4"), "12.4", "131")
    complete_toolkit(host.path("/usr/local/cuda-12.9"), "12.9", "86")
    value, release = 12020, "535.104.05"
    write_proc_version(host.root, release)
    env = {"CUDASWITCH_LIBCUDA": str(build_libcuda(tmp_path / "r535", value, init_rc=0, gpus=["sm_86"]))}
    listed = {i["short"]: i["runs_here"]["runs"] for i in json.loads(host.run("list", "--json", env=env).stdout)}
    assert listed == {"12.4": "minor-compat", "12.9": "minor-compat"}
    proc = host.run("use", "12", "--shell", "json", "--no-verify", env=env)
    assert json.loads(proc.stdout)["set"]["CUDA_HOME"] == str(host.path("/usr/local/cuda-12.9"))
    assert "newer but" not in proc.stderr
