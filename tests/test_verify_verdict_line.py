"""The verdict line `use` prints: at most 100 characters, "no driver" said on every switch (an ok
line without it reads as "it runs"), and config's `verdict = "all" | "problems" | "off"`."""

import pytest

from tests import kits
from tests.shellrun import script
from tests.verify_support import build_libcuda


@pytest.fixture
def kit_host(host):
    kits.install_classic(kits.cuda13("13.1"), host.path("/usr/local/cuda-13.1"), "13.1")
    (host.work / "config").mkdir(parents=True)
    return host


def verdicts(stderr):
    return [l for l in stderr.splitlines() if l.startswith("cudaswitch: CUDA")]


def test_no_driver_is_said_on_every_switch_and_lines_fit(kit_host, tmp_path):
    """A real bash on a host with no NVIDIA driver (a laptop) walking between two projects pinned
    to 13.1, as the hook runs hook-env on each cd: the second entry, after a switch, still says
    "no driver" (it lost it: "CUDA 13.1: ok" read as "it runs here")."""
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / ".cudaversion").write_text("13.1\n")
    hook = 'eval "$(cudaswitch hook-env --shell bash)"'
    proc = script("bash", ["cd a", hook, "cd ../b", hook], kit_host.env, timeout=600, cwd=tmp_path)
    first, second = verdicts(proc.stderr)
    assert "no NVIDIA driver here" in first and ": ok (" in first
    assert second.startswith("cudaswitch: CUDA 13.1") and "no NVIDIA driver here" in second
    assert all(len(l) - len("cudaswitch: ") <= 100 for l in (first, second))


def test_problems_mode_prints_only_problems(kit_host, tmp_path):
    (kit_host.work / "config" / "config.toml").write_text('verdict = "problems"\n')
    quiet = kit_host.run("use", "13.1", "--shell", "bash", timeout=300)
    assert quiet.returncode == 0 and verdicts(quiet.stderr) == []
    old = {"CUDASWITCH_LIBCUDA": str(build_libcuda(tmp_path / "drv", 12080))}  # a 12.8 driver cannot run 13.1
    loud = kit_host.run("use", "13.1", "--shell", "bash", env=old, timeout=300)
    [line] = verdicts(loud.stderr)
    assert ": error: " in line and "12.8" in line and len(line) - len("cudaswitch: ") <= 100


def test_off_mode_verifies_nothing_but_strict_still_refuses(kit_host, tmp_path):
    (kit_host.work / "config" / "config.toml").write_text('verdict = "off"\n')
    log = tmp_path / "probes.log"
    old = {"CUDASWITCH_LIBCUDA": str(build_libcuda(tmp_path / "drv", 12080)), "CUDASWITCH_PROBE_LOG": str(log)}
    silent = kit_host.run("use", "13.1", "--shell", "bash", env=old, timeout=300)
    assert silent.returncode == 0 and silent.stderr == "" and not log.exists()
    strict = kit_host.run("use", "13.1", "--shell", "bash", "--strict", env=old, timeout=300)
    assert strict.returncode == 1 and strict.stdout == "" and "12.8" in strict.stderr


def test_problems_mode_is_silent_over_ten_good_projects_and_one_line_for_a_bad_one(kit_host, tmp_path):
    """A real bash entering ten projects pinned to a working 13.1 (as the hook does on each cd), then
    one whose machine's driver (a 12.8 one, swapped in) cannot run it: one line, for that one only."""
    (kit_host.work / "config" / "config.toml").write_text('verdict = "problems"\n')
    hook = 'eval "$(cudaswitch hook-env --shell bash)"'
    lines = []
    for n in range(11):
        (tmp_path / ("p%d" % n)).mkdir()
        (tmp_path / ("p%d" % n) / ".cudaversion").write_text("13.1\n")
        if n == 10:
            lines.append("export CUDASWITCH_LIBCUDA=%s" % build_libcuda(tmp_path / "drv", 12080))
        lines += ["cd %s" % (tmp_path / ("p%d" % n)), hook]
    proc = script("bash", lines, kit_host.env, timeout=900, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    [line] = verdicts(proc.stderr)
    assert ": error: " in line and "12.8" in line and len(line) - len("cudaswitch: ") <= 100
