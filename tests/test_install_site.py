"""Site installs: `install 13.1 --prefix /opt/cuda/13.1 --modulefile DIR` from a mirror of NVIDIA's
redist archives (tests/redist_mirror.py, CUDA 13.1.2 from the real wheel files) gives a shared tree
that real Lmod and real Environment Modules load as `module load cuda/13.1`; `list` shows it once
with sources managed,module (and system: /opt/cuda/<version> is scanned); `uninstall` removes it
and its modulefiles, and refuses a prefix that cudaswitch did not make. /opt lies under the test
host's root, as on a cluster's shared disk."""

import json
import os
import shutil
import subprocess

import pytest

from tests import kits, redist_mirror
from tests.conftest import Host
from tests.install_support import drop_installed_trees  # noqa: F401 (autouse fixture)
from tests.test_install_redist import error_line


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    base = tmp_path_factory.mktemp("site")
    (base / "root").mkdir()
    host = Host(base / "root", base / "work")
    url = (redist_mirror.mirror() / "compute/cuda/redist").as_uri()
    prefix, modules = host.path("/opt/cuda/13.1"), base / "modules"
    proc = host.run("install", "13.1", "--mirror", url, "--prefix", str(prefix), "--modulefile", str(modules),
                    "--json", timeout=900)
    assert proc.returncode == 0, proc.stderr
    yield host, prefix, modules, json.loads(proc.stdout)
    shutil.rmtree(prefix, ignore_errors=True)


def loaded(tool_load, modules, host):
    """`nvcc --version` and CUDA_HOME in a bash that evaluated the module tool's `load cuda/13.1`."""
    bash = kits.require("bash")
    script = 'eval "$(%s bash load cuda/13.1)" && echo "CUDA_HOME=$CUDA_HOME" && nvcc --version' % tool_load
    env = {k: v for k, v in host.env.items() if k != "CUDASWITCH_ROOT"}
    env.update(MODULEPATH=str(modules), PATH="/usr/bin:/bin")
    out = subprocess.run([bash, "--noprofile", "--norc", "-c", script], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_prefix_install_writes_both_modulefiles(site):
    host, prefix, modules, result = site
    assert result["root"] == str(prefix) and result["status"] == "ok"
    assert result["modulefiles"] == [str(modules / "cuda/13.1.lua"), str(modules / "cuda/13.1")]
    assert (modules / "cuda/13.1").read_text().startswith("#%Module")
    assert "setenv(\"CUDA_HOME\", root)" in (modules / "cuda/13.1.lua").read_text()


def test_real_lmod_loads_the_lua_modulefile(site):
    host, prefix, modules, _ = site
    lmod = kits.require("lmod")
    shown = subprocess.run([lmod, "bash", "show", "cuda/13.1"], env=dict(host.env, MODULEPATH=str(modules)),
                           capture_output=True, text=True, timeout=120)
    assert str(modules / "cuda/13.1.lua") in shown.stderr  # Lmod picks the Lua file
    said = loaded(lmod, modules, host)
    assert "CUDA_HOME=%s\n" % prefix in said and "release 13.1, V13.1.115" in said


def test_real_environment_modules_loads_the_tcl_modulefile(site):
    host, prefix, modules, _ = site
    said = loaded(kits.environment_modules(), modules, host)
    assert "CUDA_HOME=%s\n" % prefix in said and "release 13.1, V13.1.115" in said


def test_list_shows_the_site_install_once_as_managed_and_module(site):
    """One entry, found three ways: cudaswitch's managed link, the modulefile, and the system scan
    of /opt/cuda/<version> (which is how a colleague without the managed link finds it too)."""
    host, prefix, modules, _ = site
    env = kits.lmod_env(modules, host.env)
    items = [i for i in json.loads(host.run("list", "--json", env=env, check=True).stdout)
             if os.path.realpath(i["root"]) == str(prefix)]
    assert len(items) == 1, items
    assert items[0]["root"] == str(prefix) and sorted(items[0]["sources"]) == ["managed", "module", "system"]
    assert items[0]["status"] == "ok"


def test_prefix_holding_something_else_is_refused(site, tmp_path):
    host, _, _, _ = site
    other = host.path("/opt/vendor/cuda")
    other.mkdir(parents=True)
    (other / "README").write_text("installed by hand\n")
    url = (redist_mirror.mirror() / "compute/cuda/redist").as_uri()
    line = error_line(host.run("install", "13.1", "--mirror", url, "--prefix", str(other), timeout=300), alone=False)
    assert "%s exists and was not made by cudaswitch" % other in line
    assert os.listdir(other) == ["README"]


def test_uninstall_refuses_a_prefix_it_did_not_make(tmp_path):
    """A tree at /opt/cuda-13.0 that a site made by hand, offered as a module; and the same tree
    linked into the managed dir by someone else: both are refused, and the tree stays."""
    (tmp_path / "root").mkdir()
    host = Host(tmp_path / "root", tmp_path / "work")
    tree = kits.install_classic(kits.cuda13("13.0"), host.path("/opt/cuda-13.0"), "13.0")
    modules = tmp_path / "modules"
    kits.write_cuda_module(modules, "13.0", tree)
    env = kits.lmod_env(modules, host.env)
    line = error_line(host.run("uninstall", str(tree), env=env), alone=True)
    assert "is not managed by cudaswitch (source: " in line and "module)" in line
    managed = host.work / "data" / "toolkits"
    managed.mkdir(parents=True)
    os.symlink(tree, managed / "13.0.2@opt-cuda-13.0")
    line = error_line(host.run("uninstall", str(tree), env=env), alone=True)
    assert "was not made by cudaswitch" in line and "nothing was removed" in line
    assert (tree / "bin" / "nvcc").exists()


def test_uninstall_removes_the_site_install_and_its_modulefiles(site):
    host, prefix, modules, _ = site
    proc = host.run("uninstall", str(prefix), timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert not prefix.exists()
    assert not (modules / "cuda/13.1.lua").exists() and not (modules / "cuda/13.1").exists()
    assert [e for e in os.listdir(host.work / "data" / "toolkits") if not e.startswith(".")] == []
