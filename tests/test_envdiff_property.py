"""`use` replaces whatever CUDA a shell had and `off` gives it back (the switching rules).

For any starting environment holding 0-3 toolkits in any of the path lists and scalars, in any
order (what ~/.bashrc exports, a module's leftovers and /usr/local/cuda leave), and any sequence of
use / off / user edits: after `use X` the only toolkit entries left are X's own and every scalar
names X or is unset; after the last `off` the start is back, byte-exact for what the user did not
touch, with the user's own entries and values kept. Each `use` runs the real switch plan (plan():
what use, hook-env, verify and kernel install call), and the diff it hands a shell turns the
environment into exactly the plan's; the records are shaped as the registry makes them; toolkits are
both registry-known (by root) and unknown ones that only look like a toolkit on disk (built below,
as a hand-unpacked tarball would)."""

import os
import tempfile

from hypothesis import given, settings
from hypothesis import strategies as st

from cudaswitch.paths import Paths
from cudaswitch.switch import envdiff
from cudaswitch.switch.plan import plan
from cudaswitch import envstate


def apply(env, change):
    """What a shell's eval of `change` (a diff) does: the environment a child of that shell sees."""
    new = dict(env)
    new.update(change["set"])
    for name in change["unset"] + change.get("unexport", []):
        new.pop(name, None)
    return new

KITS = [
    {"root": "/usr/local/cuda-%s" % v, "version": v + ".0", "nvcc": "/usr/local/cuda-%s/bin/nvcc" % v,
     "bin_dirs": ["/usr/local/cuda-%s/bin" % v], "lib_dirs": ["/usr/local/cuda-%s/lib64" % v]}
    for v in ("12.4", "13.0", "13.1")
]
KNOWN_ONLY = ["/sw/cuda/11.8", "/usr/local/cuda"]  # in the registry, never switched to here
KNOWN = [k["root"] for k in KITS] + KNOWN_ONLY

DISK = tempfile.mkdtemp(prefix="cudaswitch-prop-")


def _touch(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    open(path, "w").close()


# Unknown toolkits, each recognisable by one of the marks a real root has.
_touch(DISK + "/tarball-a/include/cuda_runtime.h")
_touch(DISK + "/tarball-b/lib64/libcudart.so.12")
_touch(DISK + "/tarball-c/bin/nvcc")
os.makedirs(DISK + "/tarball-c/nvvm/bin")
_touch(DISK + "/tarball-d/targets/x86_64-linux/include/cuda_runtime.h")
# Not toolkits: a wrapper dir with only an nvcc script, a conda env (its bin is the user's python).
_touch(DISK + "/wrappers/bin/nvcc")
_touch(DISK + "/conda/bin/nvcc")
_touch(DISK + "/conda/include/cuda_runtime.h")
os.makedirs(DISK + "/conda/conda-meta")
# cudaswitch's own dirs for the plan (its settings and compiler caches), never the user's
PATHS = Paths({"HOME": DISK, "CUDASWITCH_CACHE_DIR": DISK + "/cache", "CUDASWITCH_CONFIG_DIR": DISK + "/config",
               "CUDASWITCH_DATA_DIR": DISK + "/data"})
UNKNOWN = [DISK + "/tarball-" + c for c in "abc"] + [DISK + "/tarball-d/targets/x86_64-linux"]
TOOLKIT_ROOTS = KNOWN + UNKNOWN
NOT_TOOLKITS = [DISK + "/wrappers/bin", DISK + "/conda/bin", DISK + "/conda/lib", DISK + "/conda/include"]
SUBDIRS = ("bin", "lib64", "lib", "include", "", "lib64/pkgconfig", "share/man", "nvvm/lib64", "lib64/")


def belongs(entry):
    """The toolkit root an entry lies in, as the loader or the shell would resolve it."""
    if not entry.startswith("/"):
        return None
    path = os.path.normpath(entry)
    return next((r for r in TOOLKIT_ROOTS if path == r or path.startswith(r + "/")), None)


text = st.text(st.characters(blacklist_characters=":\0", blacklist_categories=("Cs",)), max_size=10)
toolkit_entry = st.builds(lambda root, sub: (root + "/" + sub) if sub else root,
                          st.sampled_from(TOOLKIT_ROOTS), st.sampled_from(SUBDIRS))
start_entry = st.one_of(text.map(lambda t: "/s/" + t), st.sampled_from(NOT_TOOLKITS), st.just(""),
                        st.just("relative/bin"))
user_entry = text.map(lambda t: "/u/" + t.replace(".", "_"))
list_value = st.one_of(st.none(), st.just(""),
                       st.lists(st.one_of(start_entry, toolkit_entry), min_size=1, max_size=6).map(":".join))
scalar_value = st.one_of(st.none(), st.just(""), text, st.sampled_from(TOOLKIT_ROOTS))
operation = st.one_of(
    st.tuples(st.just("use"), st.integers(0, len(KITS) - 1)),
    st.tuples(st.just("off"), st.none()),
    st.tuples(st.sampled_from(["prepend", "append"]), st.tuples(st.sampled_from(envstate.LISTS), user_entry)),
    st.tuples(st.just("set"), st.tuples(st.sampled_from(envstate.SCALARS), text.map(lambda t: "/u/" + t))),
)


def user_edit(env, kind, name, value):
    current = env.get(name)
    if kind == "set" or not current:
        env[name] = value
    else:
        env[name] = value + ":" + current if kind == "prepend" else current + ":" + value
    return env


def check_only(env, kit):
    """After `use kit`: its entries first, nothing of another toolkit anywhere, scalars name it."""
    assert env["PATH"].split(":")[0] == kit["bin_dirs"][0]
    ours = set(kit["bin_dirs"] + kit["lib_dirs"])
    for name in envstate.LISTS:
        foreign = [e for e in (env.get(name) or "").split(":") if belongs(e) and e not in ours]
        assert not foreign, (name, foreign)
    for name in envstate.SCALARS:
        assert env.get(name) in (None, kit["root"], kit["nvcc"]), (name, env.get(name))
    assert env["CUDA_HOME"] == kit["root"]


@settings(max_examples=500, deadline=None)
@given(lists=st.fixed_dictionaries({n: list_value for n in envstate.LISTS}),
       scalars=st.fixed_dictionaries({n: scalar_value for n in envstate.SCALARS}),
       ops=st.lists(operation, max_size=10))
def test_use_replaces_every_toolkit_and_off_restores_start_keeping_user_edits(lists, scalars, ops):
    start = {"HOME": "/home/u"}
    start.update({n: v for n, v in {**lists, **scalars}.items() if v is not None})
    env, expected, touched = dict(start), dict(start), {}
    for op, arg in ops:
        if op == "use":
            switch = plan(env, KITS[arg], "shell", KNOWN, paths=PATHS)
            assert apply(env, switch.diff) == switch.env  # what the shell evaluates is the plan
            env = switch.env
            check_only(env, KITS[arg])
        elif op == "off":
            if envstate.read_state(env) is not None:
                env = apply(env, envdiff.diff(env, envstate.pristine(env)))
        else:
            name, value = arg
            env = user_edit(env, op, name, value)
            expected = user_edit(expected, op, name, value)
            touched.setdefault(name, []).append(value)
    final = envstate.pristine(env)
    assert envstate.STATE_VAR not in final
    for name in set(start) | set(final) | set(expected):
        if name not in touched:
            assert final.get(name) == start.get(name), name  # byte-exact: "" stays "", unset stays unset
        elif name in envstate.SCALARS:
            assert final.get(name) == expected[name]
        else:
            entries = final[name].split(":")
            mine = [e for e in entries if e.startswith("/u/")]
            theirs = [e for e in entries if not e.startswith("/u/")]
            start_entries = start[name].split(":") if start.get(name) else []
            assert theirs == start_entries, name  # every start entry back, in its order
            assert mine == [e for e in expected[name].split(":") if e.startswith("/u/")], name


def test_a_switch_with_nothing_to_replace_changes_only_its_own_variables():
    """Mirrors a clean login shell: PATH and HOME only."""
    start = {"HOME": "/home/u", "PATH": "/usr/bin:/bin"}
    env = envdiff.switch_env(start, KITS[2], "shell", known_roots=KNOWN)[0]
    changed = {n for n in env if env.get(n) != start.get(n)}
    assert changed == {"PATH", "LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH", "CUDACXX", "CUDAToolkit_ROOT",
                       envstate.STATE_VAR}
    assert env["PATH"] == "/usr/local/cuda-13.1/bin:/usr/bin:/bin"
    assert envstate.pristine(env) == start


def test_prepend_and_append_by_the_user_land_where_they_would_have():
    """`export PATH=/u/new:$PATH` and `PATH=$PATH:/u/end` while switched come back as if cudaswitch had
    never run, with the hand-exported toolkit back at its place between them."""
    start = {"PATH": "/usr/local/cuda-12.4/bin:/usr/bin", "CPATH": "/s/inc:" + UNKNOWN[0] + "/include"}
    env = envdiff.switch_env(start, KITS[2], "shell", known_roots=KNOWN)[0]
    assert env["PATH"] == "/usr/local/cuda-13.1/bin:/usr/bin" and env["CPATH"] == "/s/inc"
    env["PATH"] = "/u/new:" + env["PATH"] + ":/u/end"
    env["CPATH"] = env["CPATH"] + ":/u/inc"
    back = envstate.pristine(env)
    assert back["PATH"] == "/u/new:/usr/local/cuda-12.4/bin:/usr/bin:/u/end"
    assert back["CPATH"] == "/s/inc:" + UNKNOWN[0] + "/include:/u/inc"


def test_a_list_emptied_by_the_switch_is_unset_not_empty():
    """gcc reads an empty CPATH entry as the current directory: a CPATH holding only the old
    toolkit's include goes away rather than becoming "" (and comes back on off)."""
    start = {"PATH": "/usr/bin", "CPATH": "/usr/local/cuda-12.4/include"}
    env = envdiff.switch_env(start, KITS[2], "shell", known_roots=KNOWN)[0]
    assert "CPATH" not in env
    assert envstate.pristine(env) == start


def test_toolkit_dirs_leave_flag_variables_in_every_spelling():
    """-I/-L joined or separate, -isystem, nvcc's --include-path=: a toolkit's dir goes, every other
    word and space stays (a build guide's `CXXFLAGS="-O2 -I/usr/local/cuda-12.4/include  -g"`)."""
    start = {"PATH": "/usr/bin", "CXXFLAGS": "-O2 -I/usr/local/cuda-12.4/include  -g -I /usr/local/cuda/include",
             "NVCC_APPEND_FLAGS": "--include-path=%s/include -isystem %s/include -DX" % (UNKNOWN[0], UNKNOWN[1]),
             "LDFLAGS": "-L/usr/lib -L/sw/cuda/11.8/lib64 -lfoo"}
    env = envdiff.switch_env(start, KITS[2], "shell", known_roots=KNOWN)[0]
    assert env["CXXFLAGS"] == "-O2  -g"
    assert env["NVCC_APPEND_FLAGS"] == "-DX"
    assert env["LDFLAGS"] == "-L/usr/lib -lfoo"
    env["LDFLAGS"] += " -L/u/mine"  # the user's own change while switched stays
    back = envstate.pristine(env)
    assert back["CXXFLAGS"] == start["CXXFLAGS"] and back["NVCC_APPEND_FLAGS"] == start["NVCC_APPEND_FLAGS"]
    assert back["LDFLAGS"] == "-L/usr/lib -lfoo -L/u/mine"


def test_a_foreign_or_mangled_state_is_ignored_not_fatal():
    """A CUDASWITCH_STATE from another build (or edited by hand) is no state: `off` has nothing to
    undo and `use` switches from the environment as it is."""
    import binascii
    import marshal

    good = envdiff.switch_env({"PATH": "/usr/bin"}, KITS[0], "shell", known_roots=KNOWN)[0]
    state = envstate.read_state(good)
    for bad in ({**state, "lists": {"PATH": ("/usr/bin",)}}, {**state, "scalars": {"CUDA_HOME": "x"}},
                {**state, "root": None}, {**state, "v": 1}, [1, 2]):
        raw = binascii.b2a_base64(marshal.dumps(bad), newline=False).decode()
        env = {**good, envstate.STATE_VAR: raw}
        assert envstate.read_state(env) is None
        assert envstate.pristine(env) == {k: v for k, v in good.items() if k != envstate.STATE_VAR}


def test_a_shell_switched_by_the_previous_version_is_undone_as_that_version_would():
    """A v1 state (the format before this one: replaced scalars + added entries) still means a
    switch: `off` after an upgrade gives back the start instead of saying nothing was switched."""
    import binascii
    import marshal

    start = {"PATH": "/usr/bin:/bin", "CUDA_HOME": "/opt/old"}
    kit = KITS[2]
    v1 = {"v": 1, "root": kit["root"], "version": kit["version"], "origin": "shell", "file": None,
          "prev": {"PATH": 1, "LD_LIBRARY_PATH": None, "CUDA_HOME": "/opt/old", "CUDA_PATH": None,
                   "CUDACXX": None, "CUDAToolkit_ROOT": None},
          "added": {"PATH": kit["bin_dirs"], "LD_LIBRARY_PATH": kit["lib_dirs"]}}
    env = {"PATH": kit["bin_dirs"][0] + ":/usr/bin:/bin", "LD_LIBRARY_PATH": kit["lib_dirs"][0],
           "CUDA_HOME": kit["root"], "CUDA_PATH": kit["root"], "CUDACXX": kit["nvcc"],
           "CUDAToolkit_ROOT": kit["root"],
           envstate.STATE_VAR: binascii.b2a_base64(marshal.dumps(v1), newline=False).decode()}
    assert envstate.read_state(env)["root"] == kit["root"]
    assert envstate.pristine(env) == start
