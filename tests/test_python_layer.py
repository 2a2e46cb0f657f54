"""The Python layer through the real `cudaswitch doctor` and `explain`: which interpreters `python`
and `python3` are and which has torch, the requirement conflicts `pip check` prints, one
distribution installed twice, and the environments that have a module "No module named X" names.
Real venvs (python -m venv, one with pip, one without) holding hand-made dist-info directories,
as a project venv looks after `pip install --no-deps` or a half-finished upgrade."""

import json
import subprocess
import sys

import pytest


def dist_info(site, name, version, requires=()):
    """A dist-info directory as pip writes one (METADATA with Requires-Dist lines, INSTALLER)."""
    directory = site / ("%s-%s.dist-info" % (name.replace("-", "_"), version))
    directory.mkdir(parents=True)
    lines = ["Metadata-Version: 2.1", "Name: %s" % name, "Version: %s" % version]
    lines += ["Requires-Dist: %s" % r for r in requires]
    (directory / "METADATA").write_text("\n".join(lines) + "\n")
    (directory / "INSTALLER").write_text("pip\n")
    (directory / "RECORD").write_text("")
    return directory


def site_packages(venv):
    [site] = (venv / "lib").glob("python3*/site-packages")
    return site


@pytest.fixture(scope="module")
def venvs(tmp_path_factory):
    """`withpip`: a venv whose packages break their requirements (pip check finds two); torch is a
    stand-in package there. `bare`: a venv made --without-pip (no packaging either)."""
    base = tmp_path_factory.mktemp("pyvenvs")
    subprocess.run([sys.executable, "-m", "venv", str(base / "withpip")], check=True, timeout=120)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(base / "bare")], check=True, timeout=120)
    site = site_packages(base / "withpip")
    dist_info(site, "alpha-tools", "1.0", ["beta>=2", "gamma", "delta; python_version < '3'"])
    dist_info(site, "beta", "1.5")
    (site / "torch").mkdir()
    (site / "torch" / "__init__.py").write_text("")
    return base


def wrappers(tmp_path, **targets):
    """A bin dir whose `python3`/`python` are shell wrappers exec'ing the given interpreters."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    for name, target in targets.items():
        (bindir / name).write_text('#!/bin/sh\nexec %s "$@"\n' % target)
        (bindir / name).chmod(0o755)
    return str(bindir) + ":/usr/bin:/bin"


def doctor_checks(host, path):
    proc = host.run("doctor", "--json", env={"PATH": path}, timeout=300)
    assert proc.stdout.strip(), proc.stderr
    return {c["id"]: c for c in json.loads(proc.stdout)["checks"]}


def test_requirement_conflicts_read_like_pip_check(host, venvs, tmp_path):
    """A project venv where `pip install --no-deps alpha-tools` left beta too old and gamma missing."""
    python = venvs / "withpip" / "bin" / "python3"
    found = doctor_checks(host, wrappers(tmp_path, python3=python, python=python))["python.requirements"]
    assert found["level"] == "warning", found
    assert "alpha-tools 1.0 has requirement beta>=2, but you have beta 1.5." in found["message"]
    assert "alpha-tools 1.0 requires gamma, which is not installed." in found["message"]
    assert "delta" not in found["message"]  # its marker excludes it, as pip check does
    pip = subprocess.run([str(python), "-m", "pip", "check"], capture_output=True, text=True, timeout=120)
    for line in pip.stdout.splitlines():
        assert line.strip().lower() in found["message"].lower(), (line, found["message"])


def test_without_packaging_the_check_says_why(host, venvs, tmp_path):
    """A venv made --without-pip (no pip, no packaging): requirements are not judged, and it says so."""
    python = venvs / "bare" / "bin" / "python3"
    found = doctor_checks(host, wrappers(tmp_path, python3=python))["python.requirements"]
    assert found["level"] == "info" and found["message"].startswith("cannot check requirements because")


def test_a_distribution_installed_twice(host, venvs, tmp_path):
    """A cluster user whose PYTHONPATH names a shared site dir holding beta 2.0 over the venv's 1.5."""
    shared = tmp_path / "shared-site"
    dist_info(shared, "beta", "2.0")
    python = venvs / "withpip" / "bin" / "python3"
    path = wrappers(tmp_path, python3=python)
    proc = host.run("doctor", "--json", env={"PATH": path, "PYTHONPATH": str(shared)}, timeout=300)
    checks = {c["id"]: c for c in json.loads(proc.stdout)["checks"]}
    twice = checks["python.duplicates"]
    assert twice["level"] == "warning" and "beta 2.0 in %s" % shared in twice["message"]
    assert "(imported)" in twice["message"].split("1.5")[0]  # the PYTHONPATH copy comes first
    assert "beta>=2" not in checks["python.requirements"]["message"]  # the imported 2.0 satisfies it
    alone = doctor_checks(host, path)["python.duplicates"]
    assert alone["level"] == "ok"


def test_python_and_python3_disagree_about_torch(host, venvs, tmp_path):
    """A workstation where `python3` is the project venv with torch and `python` a bare one."""
    with_torch, bare = venvs / "withpip" / "bin" / "python3", venvs / "bare" / "bin" / "python3"
    found = doctor_checks(host, wrappers(tmp_path, python3=with_torch, python=bare))["python.interpreters"]
    assert found["level"] == "warning" and "only `python3` has torch" in found["message"]
    assert str(with_torch) in found["message"] and str(bare) in found["message"]
    assert found["facts"]["python"]["torch"] is None and found["facts"]["python3"]["torch"]
    same = doctor_checks(host, wrappers(tmp_path, python3=with_torch, python=with_torch))["python.interpreters"]
    assert same["level"] == "ok" and "same interpreter" in same["message"]


@pytest.mark.parametrize("text", ["ModuleNotFoundError: No module named 'gammalib'",
                                  "ImportError: No module named gammalib.sub"])
def test_no_module_named_names_the_envs_that_have_it(host, venvs, tmp_path, text):
    """A JupyterHub user: gammalib went into a conda env (environments.txt) and a kernel's venv,
    while the shell's python3 is the bare venv."""
    conda = "/home/tester/miniconda3/envs/lab"
    host.path(conda + "/lib/python3.11/site-packages/gammalib").mkdir(parents=True)
    host.path(conda + "/lib/python3.11/site-packages/gammalib/__init__.py").write_text("")
    host.path("/home/tester/.conda").mkdir(parents=True)
    host.path("/home/tester/.conda/environments.txt").write_text(conda + "\n")
    kernel_env = "/opt/kernels/k1"
    host.path(kernel_env + "/lib/python3.12/site-packages").mkdir(parents=True)
    host.path(kernel_env + "/lib/python3.12/site-packages/gammalib.py").write_text("")
    spec = host.path("/home/tester/.local/share/jupyter/kernels/k1/kernel.json")
    spec.parent.mkdir(parents=True)
    spec.write_text(json.dumps({"argv": [kernel_env + "/bin/python", "-m", "ipykernel_launcher"]}))
    path = wrappers(tmp_path, python3=venvs / "bare" / "bin" / "python3")
    proc = host.run("explain", text, "--json", env={"PATH": path}, timeout=300)
    [match] = [m for m in json.loads(proc.stdout)["matches"] if m["id"] == "module_not_installed"]
    [found] = match["checks"]
    assert found["level"] == "error" and found["facts"]["module"] == "gammalib"
    assert found["facts"]["envs"] == [conda, kernel_env] and str(venvs / "bare") in found["message"]
    assert conda in found["hint"]
    for torch in ("No module named 'torch'", "No module named 'torch._C'"):  # torch's own rule, or none
        proc = host.run("explain", torch, "--json", timeout=300)
        assert "module_not_installed" not in [m["id"] for m in json.loads(proc.stdout)["matches"]]
