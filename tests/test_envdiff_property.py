"""Issue #3 acceptance 2: for any starting environment and any sequence of use / off / user edits,
`off` gives back the start (plus what the user added meanwhile), and PATH never holds two
cudaswitch entries. Runs the real envdiff on records shaped as the registry makes them."""

import os

from hypothesis import given, settings
from hypothesis import strategies as st

from cudaswitch import envdiff
from cudaswitch.envdiff import applied as apply  # what a shell's eval of the diff does

KITS = [
    {"root": "/usr/local/cuda-%s" % v, "version": v + ".0", "nvcc": "/usr/local/cuda-%s/bin/nvcc" % v,
     "bin_dirs": ["/usr/local/cuda-%s/bin" % v], "lib_dirs": ["/usr/local/cuda-%s/lib64" % v]}
    for v in ("12.4", "13.0", "13.1")
]
KIT_DIRS = {d for k in KITS for d in k["bin_dirs"] + k["lib_dirs"]}
text = st.text(st.characters(blacklist_characters=":\0", blacklist_categories=("Cs",)), max_size=12)
# Start entries may already hold a toolkit's bin (a hand-edited ~/.bashrc) or be empty.
start_entry = st.one_of(text.map(lambda t: "/s/" + t), st.sampled_from(sorted(KIT_DIRS)), st.just(""))
user_entry = text.map(lambda t: "/u/" + t)
maybe_value = st.one_of(st.none(), st.just(""), text)
list_value = st.one_of(st.none(), st.just(""), st.lists(start_entry, min_size=1, max_size=5).map(":".join))
operation = st.one_of(
    st.tuples(st.just("use"), st.integers(0, len(KITS) - 1)),
    st.tuples(st.just("off"), st.none()),
    st.tuples(st.sampled_from(["prepend", "append"]), st.tuples(st.sampled_from(envdiff.LISTS), user_entry)),
)


def user_edit(env, kind, name, entry):
    current = env.get(name)
    if not current:
        env[name] = entry
    else:
        env[name] = entry + ":" + current if kind == "prepend" else current + ":" + entry
    return env


def count_kit_entries(value):
    return sum(1 for e in (value or "").split(":") if e in KIT_DIRS)


@settings(max_examples=400, deadline=None)
@given(start_path=list_value, start_ld=list_value,
       scalars=st.fixed_dictionaries({n: maybe_value for n in envdiff.SCALARS}),
       ops=st.lists(operation, max_size=12))
def test_off_restores_start_and_keeps_user_entries(start_path, start_ld, scalars, ops):
    start = {"HOME": "/home/u"}
    for name, value in [("PATH", start_path), ("LD_LIBRARY_PATH", start_ld), *scalars.items()]:
        if value is not None:
            start[name] = value
    env, expected = dict(start), dict(start)
    for op, arg in ops:
        if op == "use":
            env = envdiff.switched(env, KITS[arg], "shell")
            assert env["PATH"].split(":")[0] == KITS[arg]["bin_dirs"][0]
        elif op == "off":
            env = apply(env, {"set": {}, "unset": []} if envdiff.read_state(env) is None
                        else envdiff.diff(env, envdiff.pristine(env)))
        else:
            name, entry = arg
            env = user_edit(env, op, name, entry)
            expected = user_edit(expected, op, name, entry)
        for name in envdiff.LISTS:
            assert count_kit_entries(env.get(name)) <= count_kit_entries(expected.get(name)) + 1
    final = envdiff.pristine(env)
    assert final == expected
