"""The `module` source with Environment Modules (Tcl modulecmd.tcl, Debian's 5.2 package via
tests/kits.py): the real modulecmd evaluates real Tcl modulefiles that point at real toolkits.
LMOD_* is unset (Host strips it); Lmod is still installed on this machine, so these tests also show
that $MODULES_CMD wins over an installed-but-not-active Lmod."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import kits
from tests.conftest import Host

CUDA_131 = "/usr/local/cuda-13.1"


def write_tcl_module(modulepath: Path, name: str, root: Path) -> Path:
    """<modulepath>/<name> as HPC sites write a Tcl modulefile."""
    text = f"""#%Module1.0
## {name}, written by tests/test_envmodules.py in the shape sites use
proc ModulesHelp {{ }} {{
    puts stderr "NVIDIA CUDA Toolkit"
}}
module-whatis "NVIDIA CUDA Toolkit"
conflict cuda
set root {{{root}}}
prepend-path PATH $root/bin
prepend-path LD_LIBRARY_PATH $root/lib64
setenv CUDA_HOME $root
"""
    path = modulepath / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# The real entry point with an audit hook that reports each process start (argv) on stderr: the way
# to tell Modules answered, since Lmod (installed here) would evaluate these Tcl files too.
SPAWN_PROBE = """
import sys
def hook(event, args):
    if event == "subprocess.Popen":
        sys.stderr.write("SPAWN %r\\n" % (list(map(str, args[1])),))
sys.addaudithook(hook)
from cudaswitch.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def list_with_spawns(host: Host):
    """(list --json by root, [argv of each module-system run]) of one `cudaswitch list --json`."""
    proc = subprocess.run([sys.executable, "-c", SPAWN_PROBE, "list", "--json"], capture_output=True,
                          text=True, env=host.env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    spawned = [eval(line[6:]) for line in proc.stderr.splitlines() if line.startswith("SPAWN ")]
    items = {item["root"]: item for item in json.loads(proc.stdout)}
    return items, [argv for argv in spawned if "modulecmd" in " ".join(argv) or "spider" in " ".join(argv)]


@pytest.fixture(scope="module")
def modulecmd():
    return kits.environment_modules()


def envmodules_host(host: Host, modulecmd: Path, modulepath: Path) -> Host:
    """What Modules' init (`modulecmd.tcl bash autoinit`, run by profile.d/modules.sh) sets, as 5.2
    prints it: MODULES_CMD, MODULESHOME (Debian's /usr/share/modules), LOADEDMODULES, MODULEPATH."""
    host.env.update({"MODULES_CMD": str(modulecmd), "MODULEPATH": str(modulepath), "LOADEDMODULES": "",
                     "MODULESHOME": str(modulecmd.parents[3] / "usr/share/modules")})
    assert not [k for k in host.env if k.startswith("LMOD")]
    return host


@pytest.fixture
def cuda131(host):
    return kits.install_classic(kits.cuda13("13.1"), host.path(CUDA_131), "13.1")


def test_list_shows_the_module_toolkit_and_which_resolves_it(host, cuda131, modulecmd, tmp_path):
    modulepath = tmp_path / "modulefiles"
    write_tcl_module(modulepath, "cuda/13.1", cuda131)
    envmodules_host(host, modulecmd, modulepath)

    items, runs = list_with_spawns(host)
    modulefile = str(modulepath / "cuda/13.1")
    assert [argv[1:] for argv in runs] == [["python", "avail", "-j"], ["python", "display", modulefile]]
    assert runs[0][0] == str(modulecmd)  # Modules was asked, not the Lmod installed on this machine
    item = items[str(cuda131)]
    assert item["sources"] == ["system", "module"] and item["status"] == "ok"
    assert item["origins"]["module"] == "cuda/13.1"
    assert item["version"].startswith("13.1.")
    proc = host.run("which", "module:13.1", check=True)
    assert proc.stdout.strip() == str(cuda131)
    assert host.run("which", "module:13.1", "nvcc", check=True).stdout.strip() == str(cuda131 / "bin/nvcc")


def test_a_new_modulefile_is_seen_without_refresh(host, cuda131, modulecmd, tmp_path):
    """Cache invalidation: the modulefile's dir is watched, so `cuda/13.0` appearing beside
    `cuda/13.1` rescans; a module-only toolkit (not under a system place) has source module alone."""
    modulepath = tmp_path / "modulefiles"
    write_tcl_module(modulepath, "cuda/13.1", cuda131)
    envmodules_host(host, modulecmd, modulepath)
    assert len(host.list_json()) == 1

    cuda130 = kits.install_classic(kits.cuda13("13.0"), host.path("/sw/cuda/13.0"), "13.0")
    write_tcl_module(modulepath, "cuda/13.0", cuda130)
    items, runs = list_with_spawns(host)
    assert len(runs) == 2  # avail, then one display for both modulefiles: not one run per module
    assert sorted(runs[1][3:]) == [str(modulepath / "cuda/13.0"), str(modulepath / "cuda/13.1")]
    assert items[str(cuda130)]["sources"] == ["module"]
    assert items[str(cuda130)]["origins"] == {"module": "cuda/13.0"}
    assert host.run("which", "module:13.0", check=True).stdout.strip() == str(cuda130)


def test_a_broken_modulefile_is_skipped_and_the_others_listed(host, cuda131, modulecmd, tmp_path):
    """A Tcl syntax error (an unclosed brace, as a bad site edit leaves) makes Modules print
    "Module ERROR" for that file only: it yields no toolkit, `list` still succeeds, and fixing the
    file is picked up without --refresh (it stays watched)."""
    modulepath = tmp_path / "modulefiles"
    write_tcl_module(modulepath, "cuda/13.1", cuda131)
    cuda130 = kits.install_classic(kits.cuda13("13.0"), host.path("/sw/cuda/13.0"), "13.0")
    broken = modulepath / "cuda/13.0"
    broken.write_text(f"#%Module1.0\nset root {{{cuda130}\nprepend-path PATH $root/bin\n")
    envmodules_host(host, modulecmd, modulepath)
    check = subprocess.run([str(modulecmd), "python", "display", str(broken)], capture_output=True,
                           text=True, timeout=60, env=host.env)
    assert "Module ERROR" in check.stderr  # the file really is broken for Modules

    proc = host.run("list", "--json", check=True)
    items = {item["root"]: item for item in json.loads(proc.stdout)}
    assert list(items) == [str(cuda131)] and items[str(cuda131)]["origins"]["module"] == "cuda/13.1"

    listed = broken.stat().st_mtime_ns
    write_tcl_module(modulepath, "cuda/13.0", cuda130)
    os.utime(broken, ns=(listed + 10**9,) * 2)  # a coarse-mtime filesystem could keep the old one
    assert host.list_json()[str(cuda130)]["origins"] == {"module": "cuda/13.0"}


def test_modules_without_avail_json_falls_back_to_terse(host, cuda131, modulecmd, tmp_path):
    """Modules before 4.5 (Ubuntu 20.04 ships 4.4) has no `avail -j`: mirrored by a MODULES_CMD that
    refuses -j and runs the real modulecmd.tcl otherwise. An alias (`cuda/latest`) is not a toolkit
    of its own; a `.version` default does not hide the version's name."""
    modulepath = tmp_path / "modulefiles"
    write_tcl_module(modulepath, "cuda/13.1", cuda131)
    (modulepath / "cuda/.modulerc").write_text("#%Module\nmodule-alias cuda/latest cuda/13.1\n")
    (modulepath / "cuda/.version").write_text("#%Module\nset ModulesVersion 13.1\n")
    old = tmp_path / "modulecmd-4.4.tcl"
    old.write_text('#!/bin/sh\n'
                   'for a; do [ "$a" = -j ] && { echo "ERROR: Invalid option \'-j\'" >&2; exit 1; }; done\n'
                   f'exec "{modulecmd}" "$@"\n')
    old.chmod(0o755)
    envmodules_host(host, modulecmd, modulepath)
    host.env["MODULES_CMD"] = str(old)
    terse = subprocess.run([str(modulecmd), "python", "avail", "-t"], capture_output=True, text=True,
                           timeout=60, env=host.env)
    assert "cuda/13.1(default)" in terse.stderr and "cuda/latest(@)" in terse.stderr

    items, runs = list_with_spawns(host)
    modulefile = str(modulepath / "cuda/13.1")
    assert [argv[2:] for argv in runs] == [["avail", "-j"], ["avail", "-t"], ["display", modulefile]]
    assert list(items) == [str(cuda131)] and items[str(cuda131)]["origins"]["module"] == "cuda/13.1"


def test_a_root_with_spaces_comes_back_whole(host, modulecmd, tmp_path):
    """Modules' display wraps an argument holding spaces in braces (`{/opt/my cuda/bin}`)."""
    root = kits.install_classic(kits.cuda13("13.1"), host.path("/opt/my cuda 13.1"), "13.1")
    modulepath = tmp_path / "modulefiles"
    write_tcl_module(modulepath, "cuda/13.1", root)
    envmodules_host(host, modulecmd, modulepath)
    items, runs = list_with_spawns(host)
    assert items[str(root)]["origins"] == {"module": "cuda/13.1"} and runs[0][0] == str(modulecmd)


def test_moduleshome_with_libexec_modulecmd_is_asked_without_modules_cmd(host, cuda131, modulecmd, tmp_path):
    """An upstream/RHEL install keeps $MODULESHOME/libexec/modulecmd.tcl (/usr/share/Modules); an
    environment that only names MODULESHOME still gets Modules, not the Lmod installed here."""
    modulepath = tmp_path / "modulefiles"
    write_tcl_module(modulepath, "cuda/13.1", cuda131)
    envmodules_host(host, modulecmd, modulepath)
    home = tmp_path / "Modules"
    (home / "libexec").mkdir(parents=True)
    (home / "libexec/modulecmd.tcl").symlink_to(modulecmd)
    del host.env["MODULES_CMD"]
    host.env["MODULESHOME"] = str(home)
    items, runs = list_with_spawns(host)
    assert items[str(cuda131)]["origins"]["module"] == "cuda/13.1"
    assert [argv[0] for argv in runs] == [str(home / "libexec/modulecmd.tcl")] * 2
