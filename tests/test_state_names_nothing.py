"""A crafted CUDASWITCH_STATE names directories; cudaswitch probes and runs nothing there.

The state is data anyone who can set a variable chooses. Its record of the environment before the
switch (the module record's `outer`, and the values its scalars give back) went to discovery, which
made a toolkit of a CUDA_HOME, PATH or MODULEPATH the state named and ran its nvcc (or, through
Lmod's spider, its modulefile's Lua) in `list`, `current`, `use`, `doctor` and `audit`. Here a
planted nvcc and a planted modulefile write a marker when run; the real commands run in real bash
(what `use` and `off` print is evaluated), and the marker stays absent, MODULEPATH gains no dir.
The legitimate record still keys the registry built before the switch (no rediscovery)."""

import json
import os
import shlex

import pytest

from tests import hostile_states
from tests.conftest import CUDASWITCH
from tests.shellrun import script
from tests.test_coexist_modules import USE, run, site  # noqa: F401 (site: the fixture)

COMMANDS = ("list", "current", "use 13.0", "doctor", "audit", "off")


def crafted(good, names, route):
    """The state `use 13.0` wrote, with one record of the environment before it rewritten."""
    outer = {"PATH": "/usr/bin", "CUDA_HOME": None}
    scalars = dict(good["scalars"])
    if route == "outer CUDA_HOME":
        outer["CUDA_HOME"] = names["evil-home"]
    elif route == "outer PATH":
        outer["PATH"] = names["evil-path"] + "/bin:/usr/bin"
    elif route == "outer MODULEPATH":
        outer["MODULEPATH"] = names["modules"]
    elif route == "outer LMOD_DIR":
        outer.update(LMOD_DIR=names["tools"], LMOD_CMD=names["tools"] + "/lmod")
    elif route == "scalar CUDA_HOME":
        scalars["CUDA_HOME"] = (names["evil-home"], None)  # restored where CUDA_HOME is unset
    modules = {"kind": "lmod", "unloaded": ["cuda/13.1"], "dir": "/nonexistent/modulefiles", "outer": outer}
    return hostile_states.encode(dict(good, scalars=scalars, modules=modules, origin="shell"))


def sequence(value, err):
    """bash lines: every command with the state set, `use` and `off` evaluated, as a user would."""
    lines = ["export CUDASWITCH_STATE=%s" % shlex.quote(value), 'before_mp="$MODULEPATH"']
    for cmd in COMMANDS:
        if cmd.startswith(("use", "off")):
            lines.append('out=$(%s %s --shell bash 2>>%s) && eval "$out"' % (CUDASWITCH, cmd, err))
        else:
            lines.append("%s %s >/dev/null 2>>%s" % (CUDASWITCH, cmd, err))
    lines.append('echo "MP<$before_mp><$MODULEPATH>"')
    return lines


@pytest.fixture(scope="module")
def good_state(standard_host):
    proc = standard_host.run("use", "13.0", "--shell", "json", check=True)
    return hostile_states.decode(json.loads(proc.stdout)["set"]["CUDASWITCH_STATE"])


ROUTES = ("outer CUDA_HOME", "outer PATH", "outer MODULEPATH", "outer LMOD_DIR", "scalar CUDA_HOME")


@pytest.mark.parametrize("route", ROUTES)
def test_a_crafted_state_runs_nothing_it_names(standard_host, good_state, tmp_path, route):
    marker = tmp_path / "marker"
    names = hostile_states.plant(standard_host, tmp_path, marker)
    err = tmp_path / "stderr"
    proc = script("bash", sequence(crafted(good_state, names, route), err) + ["echo DONE"],
                  dict(standard_host.env), cwd=str(tmp_path), timeout=600)
    stderr = err.read_text()
    assert "DONE" in proc.stdout and "Traceback" not in stderr, stderr[-1500:]
    assert not marker.exists(), "ran what the state named: " + marker.read_text()
    line = next(x for x in proc.stdout.splitlines() if x.startswith("MP<"))
    before, after = line[3:-1].split("><")
    assert set(filter(None, after.split(":"))) <= set(filter(None, before.split(":"))), line


def test_the_record_of_a_real_use_keeps_the_registry_built_before_it(standard_host, tmp_path):
    """`use` then `list`: the registry cache is the one built before the switch, not rebuilt (its
    file is untouched), since the state's record is exactly that registry's key."""
    env = dict(standard_host.env, CUDASWITCH_CACHE_DIR=str(tmp_path / "cache"))
    standard_host.run("list", env=env, check=True)
    cache = tmp_path / "cache" / "registry.marshal"
    stamp = os.stat(cache).st_mtime_ns, os.stat(cache).st_ino
    switched = json.loads(standard_host.run("use", "13.1", "--shell", "json", env=env, check=True).stdout)["set"]
    listed = standard_host.run("list", "--json", env={**env, **switched}, check=True)
    assert (os.stat(cache).st_mtime_ns, os.stat(cache).st_ino) == stamp
    assert any(item["active"] and item["short"] == "13.1" for item in json.loads(listed.stdout))


CRAFT = """import os, sys
sys.path.insert(0, {repo!r})
from tests import hostile_states
state = hostile_states.decode(os.environ["CUDASWITCH_STATE"])
account = state["modules"]["account"]
before, after = account["MODULEPATH"]
account["MODULEPATH"] = [{evil!r} + ":" + before, after]
print(hostile_states.encode(state))
"""


@pytest.mark.parametrize("system", ["lmod", "envmodules"])
def test_off_exports_no_modulepath_dir_a_crafted_module_account_names(site, system, tmp_path):  # noqa: F811
    """After a real `use` swapped cuda/13.0 out, the state's module account is rewritten so the
    MODULEPATH it restores starts with a dir of the attacker's, whose cuda/99.0 leaves a mark when
    loaded. `off` gives the module system's own MODULEPATH (cuda/13.0 loaded again, no new dir),
    and `module load cuda/99.0` finds nothing to run."""
    marker = tmp_path / "marker"
    evil = tmp_path / "evil-modules"
    (evil / "cuda").mkdir(parents=True)
    (evil / "cuda" / "99.0.lua").write_text(hostile_states.LUA.format(marker=marker, root="/nonexistent"))
    (evil / "cuda" / "99.0").write_text("#%%Module1.0\nputs stderr [exec touch %s]\n" % marker)
    craft = tmp_path / "craft.py"
    craft.write_text(CRAFT.format(repo=os.path.dirname(os.path.dirname(os.path.abspath(__file__))), evil=str(evil)))
    *_, proc = run(site, system, [
        "module load cuda/13.0", 'before="$MODULEPATH"', USE % "use 13.1",
        'export CUDASWITCH_STATE="$(python3 %s)"' % craft, USE % "off",
        'echo "MP<$before><$MODULEPATH>"', "echo LOADED=$LOADEDMODULES", "module load cuda/99.0 2>/dev/null; true"])
    line = next(x for x in proc.stdout.splitlines() if x.startswith("MP<"))
    before, after = line[3:-1].split("><")
    assert str(evil) not in after and set(after.split(":")) <= set(before.split(":")), line
    assert "LOADED=cuda/13.0" in proc.stdout, proc.stdout + proc.stderr[-800:]
    assert not marker.exists() and "Traceback" not in proc.stderr, proc.stderr[-800:]


def test_the_seal_holds_only_for_the_record_as_sealed_and_its_key_is_private(tmp_path):
    """In process: a record's seal checks out with the key cudaswitch made (0600, its own), not
    after any change to the record, and not under another user's key (another cache dir)."""
    from cudaswitch.paths import Paths
    from cudaswitch.switch import modswitch

    paths = Paths({"CUDASWITCH_CACHE_DIR": str(tmp_path / "cache"), "HOME": str(tmp_path)})
    record = {"kind": "lmod", "unloaded": ["cuda/13.0"], "dir": "/d", "outer": {"PATH": "/usr/bin", "HOME": None},
              "account": {"MODULEPATH": ["/a", "/a:/d"]}}
    record["seal"] = modswitch.seal_of(paths, record)
    key = tmp_path / "cache" / modswitch.KEY_FILE
    assert oct(key.stat().st_mode & 0o777) == "0o600" and len(key.read_bytes()) == 32
    assert modswitch.seal_of(paths, dict(reversed(list(record.items()))), create=False) == record["seal"]
    changed = dict(record, account={"MODULEPATH": ["/evil:/a", "/a:/d"]})
    assert modswitch.seal_of(paths, changed, create=False) != record["seal"]
    other = Paths({"CUDASWITCH_CACHE_DIR": str(tmp_path / "other"), "HOME": str(tmp_path)})
    assert modswitch.seal_of(other, record, create=False) is None
    assert modswitch.is_sealed(paths, record) and not modswitch.is_sealed(paths, changed)
    key.chmod(0o644)  # a key others could read is no key
    assert modswitch.seal_of(paths, record, create=False) is None
    assert not modswitch.is_sealed(paths, record)
    # a crafted record with no seal, for a user with no usable key: no seal either (None is not None's seal)
    assert not modswitch.is_sealed(other, {k: v for k, v in record.items() if k != "seal"})


def test_a_module_name_with_control_characters_makes_the_state_foreign():
    from cudaswitch import envstate

    for name in ("cuda/13.0\x1b[2J", "cuda\x07", "cuda/\u202e31"):
        state = {"v": envstate.STATE_VERSION, "root": "/r", "version": "13.0", "origin": "shell", "file": None,
                 "scalars": {}, "lists": {}, "modules": {"kind": "lmod", "unloaded": [name], "dir": "/d"}}
        assert envstate.read_state({envstate.STATE_VAR: hostile_states.encode(state)}) is None, name
