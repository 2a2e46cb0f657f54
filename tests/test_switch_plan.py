"""What `verify X` judges is what `eval "$(cudaswitch use X)"` gives: one switch plan.

Each case starts a real bash in a state users have, then, in that same shell, runs `cudaswitch
verify X --json` and `eval "$(cudaswitch use X --shell bash)"`, and dumps the environment a child
of the shell sees before and after. The environment verify reports (its "environment": the
variables set and unset, in `use --shell json`'s shape) applied to the environment before must be
the environment after, every variable byte-exact, CUDASWITCH_STATE included. The states:
- a CUDA module loaded with real Lmod (`module load cuda/13.1`, then switching to 13.0): the
  module is swapped out through Lmod, so Lmod's own variables change too, in both; and
  `module:13.1` asked with no module loaded, which Lmod loads itself;
- CUDA exported by hand in an rc file (PATH, LD_LIBRARY_PATH, CPATH, CUDA_HOME of another toolkit);
- an activated conda env with cuda-nvcc over a hand-exported toolkit, switched to the env's;
- a toolkit whose crt/host_config.h refuses the host's gcc 12 (CUDA 11.4.1-11.8 cap gcc at 11):
  both pick the installed g++-11, and `kernel install` and `audit --compile` build on the same plan.
"""

import json
import shutil

import pytest

from tests import kits
from tests.conftest import HOME, Host
from tests.shellrun import script
from tests.test_verify_gcc import cap_ceiling, gcc_major
from tests.verify_support import by_id

# Variables bash itself sets for each child, which no switch touches.
SHELL_OWN = frozenset({"_", "SHLVL", "PWD", "OLDPWD"})
DUMP = "python3 -c 'import json, os, sys; json.dump(dict(os.environ), open(sys.argv[1], \"w\"))' %s"


def verify_then_use(host, request, setup, tmp_path, env=None):
    """(environment before, verify's report, environment after `use`) of one bash session."""
    lines = list(setup) + [
        DUMP % "before.json",
        "cudaswitch verify %s --json > verify.json" % request,
        'eval "$(cudaswitch use %s --shell bash --no-verify)" || echo USE-FAILED' % request,
        DUMP % "after.json",
    ]
    proc = script("bash", lines, {**host.env, **(env or {})}, timeout=600, cwd=tmp_path)
    assert "USE-FAILED" not in proc.stdout and (tmp_path / "after.json").exists(), proc.stdout + proc.stderr
    read = lambda name: json.loads((tmp_path / name).read_text())  # noqa: E731
    try:
        report = read("verify.json")
    except ValueError:
        raise AssertionError("verify printed no JSON: %s" % proc.stderr[-3000:]) from None
    return read("before.json"), report, read("after.json")


def applied(before, change):
    """The environment a shell has after evaluating `change` ({"set": ..., "unset": [...]})."""
    out = dict(before)
    out.update(change["set"])
    for name in change["unset"]:
        out.pop(name, None)
    return out


def assert_same_environment(before, report, after):
    assert set(report["environment"]) == {"set", "unset"}
    judged = applied(before, report["environment"])
    names = (set(judged) | set(after)) - SHELL_OWN
    differ = {n: {"verify": judged.get(n), "use": after.get(n)} for n in sorted(names) if judged.get(n) != after.get(n)}
    assert differ == {}, json.dumps(differ, indent=1)[:4000]


def test_a_loaded_lmod_module_is_swapped_out_in_both(standard_host, tmp_path):
    """Mirrors a cluster login: `module load cuda/13.1` in the profile, then `use 13.0`."""
    kits.require("lmod")
    setup = ['source "$LMOD_PKG/init/bash"', "module load cuda/13.1"]
    before, report, after = verify_then_use(standard_host, "13.0", setup, tmp_path)
    assert "cuda/13.1" in before["LOADEDMODULES"].split(":")
    assert "cuda/cudaswitch" in after["LOADEDMODULES"].split(":") and "cuda/13.1" not in after["LOADEDMODULES"]
    assert "LOADEDMODULES" in report["environment"]["set"]  # verify judged the swapped environment
    assert report["toolkit"]["root"] == after["CUDA_HOME"] == str(standard_host.path("/usr/local/cuda-13.0"))
    assert_same_environment(before, report, after)


def test_use_module_loads_the_module_in_both(standard_host, tmp_path):
    """Mirrors `use module:13.1` at a cluster login with no CUDA module loaded: Lmod itself loads
    cuda/13.1 for `use`, and verify judges that same environment, Lmod's own variables included."""
    kits.require("lmod")
    before, report, after = verify_then_use(standard_host, "module:13.1", ['source "$LMOD_PKG/init/bash"'], tmp_path)
    assert "cuda/13.1" not in (before.get("LOADEDMODULES") or "")
    assert "cuda/13.1" in after["LOADEDMODULES"].split(":") and "LOADEDMODULES" in report["environment"]["set"]
    assert_same_environment(before, report, after)


def test_hand_exports_of_another_toolkit_are_replaced_in_both(standard_host, tmp_path):
    """Mirrors a ~/.bashrc written from NVIDIA's install guide for another release."""
    other = standard_host.path("/usr/local/cuda-13.1")
    setup = ["export CUDA_HOME=%s" % other, "export PATH=%s/bin:$PATH" % other,
             "export LD_LIBRARY_PATH=%s/lib64:/opt/site/lib" % other, "export CPATH=%s/include" % other]
    before, report, after = verify_then_use(standard_host, "13.0", setup, tmp_path)
    assert str(other) in before["PATH"] and str(other) not in after["PATH"]
    assert after["LD_LIBRARY_PATH"].endswith(":/opt/site/lib") and "CPATH" in report["environment"]["unset"]
    assert_same_environment(before, report, after)


def test_an_activated_conda_env_switched_to_its_own_toolkit(standard_host, tmp_path):
    """Mirrors `conda activate cu13` (cuda-nvcc from conda-forge) over a system 13.1 exported by
    hand, then `use conda:13`: the env's bin (its python and nvcc) stays first, 13.1 goes."""
    env_dir = standard_host.path(HOME + "/miniconda3/envs/cu13")
    other = standard_host.path("/usr/local/cuda-13.1")
    setup = ["export CUDA_HOME=%s PATH=%s/bin:$PATH" % (other, other),
             "export CONDA_PREFIX=%s/miniconda3/envs/cu13 CONDA_DEFAULT_ENV=cu13" % HOME,
             "export PATH=%s/bin:$PATH" % env_dir]
    before, report, after = verify_then_use(standard_host, "conda:13", setup, tmp_path)
    assert after["PATH"].split(":")[0] == str(env_dir / "bin") and str(other) not in after["PATH"]
    assert report["toolkit"]["root"] == str(env_dir) == after["CUDA_HOME"]
    assert_same_environment(before, report, after)


@pytest.fixture(scope="module")
def capped_host(tmp_path_factory):
    """13.1 whose host_config.h refuses gcc > 11, on this host's gcc 12 with g++-11 installed."""
    assert gcc_major("gcc") >= 12 and gcc_major("g++-11") == 11, "this case mirrors a host gcc above 11"
    base = tmp_path_factory.mktemp("capped")
    host = Host(base / "root", base / "work")
    cap_ceiling(kits.install_classic(kits.cuda13("13.1"), host.path("/usr/local/cuda-13.1"), "13.1"), 11)
    return host


def test_the_host_compiler_the_switch_picks_is_the_one_verified(capped_host, tmp_path):
    """Mirrors CUDA 11.8 on Debian 12 (gcc 12): both point nvcc and CMake at g++-11, and verify's
    compiler check judges that choice instead of the gcc nvcc would refuse."""
    gxx11 = shutil.which("g++-11")
    before, report, after = verify_then_use(capped_host, "13.1", [], tmp_path)
    assert after["NVCC_CCBIN"] == after["CUDAHOSTCXX"] == gxx11 and "NVCC_CCBIN" not in before
    [gcc] = by_id(report, "gcc.supported")
    assert gcc["level"] == "ok" and gcc["facts"]["compiler"] == gxx11, gcc
    assert_same_environment(before, report, after)
    # and from the same starting environment, verify reports what `use --shell json` prints
    proc = capped_host.run("use", "13.1", "--shell", "json", "--no-verify", check=True)
    again = capped_host.run("verify", "13.1", "--json", timeout=300)
    assert json.loads(again.stdout)["environment"] == json.loads(proc.stdout)


def test_kernel_install_and_audit_build_on_the_same_plan(capped_host, tmp_path):
    """A Jupyter kernel for the capped toolkit carries the compiler `use` picks, and audit's build
    of it succeeds with that compiler (the host's default gcc 12 is refused by its header)."""
    gxx11 = shutil.which("g++-11")
    data = tmp_path / "jupyter"
    proc = capped_host.run("kernel", "install", "13.1", "--python", shutil.which("python3"),
                           env={"JUPYTER_DATA_DIR": str(data)}, timeout=300)
    assert proc.returncode == 0, proc.stderr
    spec = json.loads((data / "kernels" / "cuda-13.1" / "kernel.json").read_text())
    assert spec["env"]["NVCC_CCBIN"] == spec["env"]["CUDAHOSTCXX"] == gxx11
    proc = capped_host.run("audit", "--json", "--root", str(capped_host.root), "--compile", "--exec", timeout=600)
    [entry] = json.loads(proc.stdout)["toolkits"]
    assert entry["compiles"] is True and entry["compile_error"] is None, entry
