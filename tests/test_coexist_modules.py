"""A shell with `module load cuda/13.0` (real Lmod, real Environment Modules, real bash and their
`module` functions), then `cudaswitch use 13.1`: nothing of the module's toolkit remains (PATH,
LD_LIBRARY_PATH, CPATH, CMAKE_PREFIX_PATH, CUDA_ROOT and a site variable the modulefile set), and
`module list` no longer lists cuda/13.0; `off` loads cuda/13.0 again as a module. A `module unload
cuda` or `module purge` by the user while switched is not undone by `off`."""

import json
import os

import pytest

from tests import kits
from tests.conftest import CUDASWITCH
from tests.shellrun import script

VARS = ("PATH", "LD_LIBRARY_PATH", "CPATH", "CMAKE_PREFIX_PATH", "CUDA_HOME", "CUDA_PATH", "CUDA_ROOT",
        "CUDA_INSTALL_PATH", "CUDASWITCH_STATE", "LOADEDMODULES", "MODULEPATH")
DUMP = ("python3 -c 'import os, json, sys; print(\"DUMP\" + json.dumps({n: os.environ.get(n) for n in sys.argv[1:]}))' "
        + " ".join(VARS))
USE = 'eval "$(cudaswitch %s --shell bash)"'
LIST = "module list 2>&1 | tr -s ' \\n' ' ' | sed 's/^/LIST /'; echo"
NVCC = ("if command -v nvcc >/dev/null; then nvcc --version | grep -o 'release [0-9.]*' | sed 's/^/NVCC /'; "
        "else echo 'NVCC none'; fi")
FISH_NVCC = ("if command -v nvcc >/dev/null; nvcc --version | grep -o 'release [0-9.]*' | sed 's/^/NVCC /'; "
             "else; echo 'NVCC none'; end")

LUA = """whatis("CUDA 13.0")
family("cuda")
local root = "{root}"
setenv("CUDA_HOME", root)
setenv("CUDA_ROOT", root)
setenv("CUDA_INSTALL_PATH", root)
prepend_path("PATH", pathJoin(root, "bin"))
prepend_path("LD_LIBRARY_PATH", pathJoin(root, "lib64"))
prepend_path("CPATH", pathJoin(root, "include"))
prepend_path("CMAKE_PREFIX_PATH", root)
"""
TCL = """#%Module1.0
module-whatis "CUDA 13.0"
conflict cuda
set root {{{root}}}
setenv CUDA_HOME $root
setenv CUDA_ROOT $root
setenv CUDA_INSTALL_PATH $root
prepend-path PATH $root/bin
prepend-path LD_LIBRARY_PATH $root/lib64
prepend-path CPATH $root/include
prepend-path CMAKE_PREFIX_PATH $root
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A cluster node: the module's toolkit under /sw (only the module points at it), a system
    13.1 at /usr/local/cuda-13.1, and both module systems' modulefiles for cuda/13.0."""
    from tests.conftest import Host

    base = tmp_path_factory.mktemp("site")
    host = Host(base / "root", base / "work")
    host.env["PATH"] = os.path.dirname(CUDASWITCH) + ":/usr/bin:/bin"  # no nvcc of this machine's own
    a = kits.install_classic(kits.cuda13("13.0"), host.path("/sw/cuda/13.0"), "13.0")
    b = kits.install_classic(kits.cuda13("13.1"), host.path("/usr/local/cuda-13.1"), "13.1")
    (base / "lua" / "cuda").mkdir(parents=True)
    (base / "lua" / "cuda" / "13.0.lua").write_text(LUA.format(root=a))
    (base / "tcl" / "cuda").mkdir(parents=True)
    (base / "tcl" / "cuda" / "13.0").write_text(TCL.format(root=a))
    return host, str(a), str(b), base


def lmod_shell(site, shell="bash"):
    host, a, b, base = site
    kits.require("lmod")
    env = {**host.env, **kits.lmod_env(base / "lua")}
    return env, ['source "$LMOD_PKG/init/%s"' % shell]


def envmodules_shell(site, shell="bash"):
    """Modules' init defines `module` as an eval of modulecmd.tcl's bash output; this is that."""
    host, a, b, base = site
    modulecmd = kits.environment_modules()
    env = {**host.env, "MODULES_CMD": str(modulecmd), "MODULEPATH": str(base / "tcl"), "LOADEDMODULES": "",
           "MODULESHOME": str(modulecmd.parents[3] / "usr/share/modules")}
    return env, ['module() { eval "$("$MODULES_CMD" bash "$@")"; }']


SYSTEMS = {"lmod": lmod_shell, "envmodules": envmodules_shell}


def run(site, system, lines, shell="bash"):
    env, init = SYSTEMS[system](site, shell)
    proc = script(shell, init + lines, env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    dumps = [json.loads(line[4:]) for line in out if line.startswith("DUMP")]
    lists = [line[5:] for line in out if line.startswith("LIST ")]
    nvccs = [line[5:] for line in out if line.startswith("NVCC ")]
    return dumps, lists, nvccs, proc


def under(env, root):
    """Every (variable, value) that still names `root`."""
    found = []
    for name in VARS[:-3]:
        value = env.get(name) or ""
        found += [(name, e) for e in value.split(":") if e and (e == root or e.startswith(root + "/"))]
    return found


@pytest.mark.parametrize("system, shell", [("lmod", "bash"), ("envmodules", "bash"), ("lmod", "zsh"),
                                           ("lmod", "fish")])
def test_use_swaps_the_module_out_and_off_loads_it_again(site, system, shell):
    host, a, b, base = site
    use = "cudaswitch %s --shell fish | source" if shell == "fish" else USE.replace("bash", shell)
    nvcc = FISH_NVCC if shell == "fish" else NVCC
    dumps, lists, nvccs, proc = run(site, system, [
        "module load cuda/13.0", DUMP, LIST, nvcc,
        use % "use 13.1", DUMP, LIST, nvcc,
        use % "off", DUMP, LIST, nvcc,
        "module unload cuda", DUMP, nvcc], shell)
    loaded, switched, back, unloaded = dumps
    assert loaded["CUDA_HOME"] == a and under(loaded, a) and "cuda/13.0" in lists[0]
    assert nvccs[0] == "release 13.0"

    assert under(switched, a) == [], "the module's toolkit is still there"
    assert switched["CUDA_HOME"] == b and switched["CUDA_INSTALL_PATH"] is None and switched["CUDA_ROOT"] is None
    assert "cuda/13.0" not in lists[1] and "cuda/cudaswitch" in lists[1]
    assert nvccs[1] == "release 13.1"

    assert back["CUDA_HOME"] == a and back["CUDASWITCH_STATE"] is None
    assert "cuda/13.0" in lists[2] and "cudaswitch" not in lists[2]
    assert nvccs[2] == "release 13.0"
    for name in ("PATH", "LD_LIBRARY_PATH", "CPATH", "CMAKE_PREFIX_PATH", "CUDA_ROOT", "LOADEDMODULES",
                 "MODULEPATH"):
        assert back[name] == loaded[name], name

    assert unloaded["CUDA_HOME"] is None and under(unloaded, a) == [] and under(unloaded, b) == []
    assert "cudaswitch: swapped module cuda/13.0 for cuda/cudaswitch" in proc.stderr
    assert "cudaswitch: loading module cuda/13.0 again" in proc.stderr


@pytest.mark.parametrize("system", SYSTEMS)
@pytest.mark.parametrize("user", ["module unload cuda", "module purge"])
def test_a_module_unloaded_by_the_user_meanwhile_stays_unloaded_after_off(site, system, user):
    host, a, b, base = site
    dumps, lists, nvccs, proc = run(site, system, [
        DUMP, "module load cuda/13.0", USE % "use 13.1 --no-verify", user, USE % "off", DUMP, LIST, NVCC])
    start, after = dumps
    assert after["CUDA_HOME"] is None and after["CUDA_ROOT"] is None and after["CUDA_INSTALL_PATH"] is None
    assert under(after, a) == [] and under(after, b) == []
    assert "cuda/" not in lists[0]
    assert nvccs == ["none"]
    assert after["PATH"] == start["PATH"]
    assert "not loading cuda/13.0 again: cuda/cudaswitch was unloaded or replaced since `use`" in proc.stderr


DOCTOR = ("cudaswitch doctor --json | python3 -c 'import json, sys; "
          "print(\"DOC\" + json.dumps(json.load(sys.stdin)))'; "
          "cudaswitch current --json | sed 's/^/CUR/'")


def test_doctor_agrees_with_current_in_every_starting_state(site):
    """doctor's toolkit layer diagnoses the toolkit `current` names, its env layer states the same
    facts, and its one-toolkit verdict is ok exactly when nvcc and CUDA_HOME agree: in a hand-set
    shell, a module shell, each switched, and after `module load; use; module unload; off`."""
    host, a, b, base = site
    hand_set = ["export PATH=%s/bin:$PATH LD_LIBRARY_PATH=%s/lib64 CUDA_HOME=%s" % (a, a, a)]
    states = {
        "hand-set": hand_set + [DOCTOR],
        "hand-set, then use": hand_set + [USE % "use 13.1 --no-verify", DOCTOR],
        "hand-set PATH, CUDA_HOME of another": hand_set + ["export CUDA_HOME=%s" % b, DOCTOR],
        "module": ["module load cuda/13.0", DOCTOR],
        "module, then use": ["module load cuda/13.0", USE % "use 13.1 --no-verify", DOCTOR],
        "module, use, unload, off": ["module load cuda/13.0", USE % "use 13.1 --no-verify", "module unload cuda",
                                     USE % "off", DOCTOR],
    }
    expected = {"hand-set": (a, "hand-set"), "hand-set, then use": (b, "shell"),
                "hand-set PATH, CUDA_HOME of another": (a, "hand-set"), "module": (a, "module"),
                "module, then use": (b, "shell"), "module, use, unload, off": (None, "none")}
    for name, lines in states.items():
        _, _, _, proc = run(site, "lmod", lines)
        doc = json.loads(next(l[3:] for l in proc.stdout.splitlines() if l.startswith("DOC")))
        cur = json.loads(next(l[3:] for l in proc.stdout.splitlines() if l.startswith("CUR")))
        assert (cur["root"], cur["reason"]) == expected[name], (name, cur)
        checks = {c["id"]: c for c in doc["checks"]}
        assert checks["env.in_use"]["facts"]["root"] == cur["root"], name
        assert (doc["toolkit"] or {}).get("root") == cur["root"], name
        both = cur["nvcc"] and cur["cuda_home"]
        if both:
            assert (checks["env.one_toolkit"]["level"] == "ok") == cur["agree"], (name, checks["env.one_toolkit"])


def test_two_switches_then_off_reload_the_module_once(site):
    """`use 13.1; use module:13.0; off`: the second switch asks for the module, so the first swap is
    undone and cuda/13.0 is the shell's module again (`module list` says so); off then leaves it
    loaded as it was at the start, nothing doubled."""
    host, a, b, base = site
    dumps, lists, nvccs, proc = run(site, "lmod", [
        "module load cuda/13.0", DUMP, USE % "use 13.1 --no-verify", USE % "use module:13.0 --no-verify", DUMP,
        LIST, USE % "off", DUMP, LIST])
    loaded, second, back = dumps
    assert second["CUDA_HOME"] == a and "cuda/13.0" in lists[0] and "cudaswitch" not in lists[0]
    assert under(second, b) == []
    for name in ("PATH", "LD_LIBRARY_PATH", "CPATH", "CMAKE_PREFIX_PATH", "CUDA_HOME", "LOADEDMODULES", "MODULEPATH"):
        assert back[name] == loaded[name], name
    assert "cuda/13.0" in lists[1]


def test_a_cuda_module_loaded_by_the_user_while_switched_is_kept_by_off(site):
    """Lmod's family("cuda") swaps the marker out when the user loads a CUDA module: `off` then
    takes away only cudaswitch's own toolkit and leaves the user's module as it is."""
    host, a, b, base = site
    dumps, lists, nvccs, proc = run(site, "lmod", [
        USE % "use 13.1 --no-verify", "module load cuda/13.0", USE % "off", DUMP, LIST, NVCC])
    after, = dumps
    assert after["CUDA_HOME"] == a and under(after, b) == [] and "cuda/13.0" in lists[0]
    assert nvccs == ["release 13.0"]


def test_the_registry_cache_survives_the_module_swap(site, tmp_path):
    """Discovery reads the environment as it was before `use` (module loaded), so after the swap a
    `current` or another `use` answers from the cache: no spider run, no module command."""
    import sys

    from tests.test_envmodules import SPAWN_PROBE

    probe = tmp_path / "probe.py"
    probe.write_text(SPAWN_PROBE)
    spawned = '%s %s %%s 2>&1 >/dev/null | grep "^SPAWN" | sed "s/^/RAN /"; echo' % (sys.executable, probe)
    dumps, lists, nvccs, proc = run(site, "lmod", [
        "module load cuda/13.0", "cudaswitch list >/dev/null", USE % "use 13.1 --no-verify",
        spawned % "current", spawned % "use 13.0 --no-verify --shell bash", LIST])
    assert "cuda/cudaswitch" in lists[0]
    ran = [line for line in proc.stdout.splitlines() if line.startswith("RAN ")]
    assert ran == [], ran


def test_the_hook_swaps_a_loaded_module_on_entering_a_project_and_back_on_leaving(site, tmp_path):
    """An interactive bash on a cluster: cuda/13.0 loaded, the hook in the rc file, a project pinned
    to 13.1. Entering it swaps the module out (module list says so); leaving loads it again."""
    from tests.shellrun import INIT, Interactive

    host, a, b, base = site
    env, init = lmod_shell(site)
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / ".cudaversion").write_text("13.1\n")
    sh = Interactive("bash", env, cwd=str(tmp_path))
    try:
        for line in init + ["module load cuda/13.0", INIT["bash"]]:
            sh.run(line)
        outside = sh.run('echo "HOME=<$CUDA_HOME>"; module list 2>&1 | cat')
        sh.run("cd proj")
        inside = sh.run('echo "HOME=<$CUDA_HOME>"; module list 2>&1 | cat')
        sh.run("cd ..")
        back = sh.run('echo "HOME=<$CUDA_HOME>"; module list 2>&1 | cat')
    finally:
        sh.close()
    assert "HOME=<%s>" % a in outside and "cuda/13.0" in outside
    assert "HOME=<%s>" % b in inside and "cuda/cudaswitch" in inside and "cuda/13.0" not in inside
    assert "HOME=<%s>" % a in back and "cuda/13.0" in back and "cudaswitch" not in back


def test_off_with_a_modulefile_gone_meanwhile_fails_cleanly_and_says_how_out(site, tmp_path):
    """The site removed cuda/13.0 while the shell was switched: `off` cannot load it again. One
    error line with the way out, nothing for eval, the shell still switched; the way out works."""
    host, a, b, base = site
    gone = tmp_path / "lua"
    (gone / "cuda").mkdir(parents=True)
    (gone / "cuda" / "13.0.lua").write_text(LUA.format(root=a))
    env, init = lmod_shell(site)
    env["MODULEPATH"] = str(gone)
    proc = script("bash", init + [
        "module load cuda/13.0", USE % "use 13.1 --no-verify", "rm %s" % (gone / "cuda" / "13.0.lua"),
        'out=$(cudaswitch off --shell bash); echo "RC=$? OUT=<$out>"', 'echo "HOME=<$CUDA_HOME>"',
        "module unload cuda/cudaswitch", USE % "off", DUMP], env, timeout=300)
    assert "RC=1 OUT=<>" in proc.stdout and "HOME=<%s>" % b in proc.stdout
    errors = [line for line in proc.stderr.splitlines() if "error" in line]
    assert len(errors) == 1 and "module switch" in errors[0] and "module unload cuda/cudaswitch" in proc.stderr
    after = json.loads(next(line[4:] for line in proc.stdout.splitlines() if line.startswith("DUMP")))
    assert after["CUDASWITCH_STATE"] is None and after["CUDA_HOME"] is None and under(after, b) == []
