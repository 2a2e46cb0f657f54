"""The environment a switch produces, and the diff a shell applies to get there: every entry of
another toolkit leaves the path lists, the scalars name the new one, and what was replaced is kept
in CUDASWITCH_STATE for `off` (envstate), unexported variables named there to come back unexported."""

import os

from cudaswitch.envstate import (FLAG_VARS, LISTS, SCALARS, STATE_VAR, STATE_VERSION, assign, in_front, pristine,
                                 read_state, split)
from cudaswitch.statecodec import encode
from cudaswitch.switch.toolkitdirs import Owner

# Set for the program only, by the hook's functions (and bash.rerun): the variables the shell had
# set without exporting them, exported for this one call so that cudaswitch sees them.
UNEXPORTED_VAR = "CUDASWITCH_UNEXPORTED"
# Set on every switch; CUDA_ROOT and CUDA_DIR only where the shell had them (few tools read them).
ALWAYS_SET = ("CUDA_HOME", "CUDA_PATH", "CUDACXX", "CUDAToolkit_ROOT")
DIR_OPTIONS = ("--include-path=", "--library-path=", "-isystem", "-I", "-L")


def path_entries(record: dict) -> "dict[str, list[str]]":
    """{"PATH": [...], "LD_LIBRARY_PATH": [...]}: what a switch to `record` prepends (its view's or its own)."""
    return {"PATH": list(record.get("env_bin") or record["bin_dirs"]),
            "LD_LIBRARY_PATH": list(record.get("env_lib") or record["lib_dirs"])}


def switch_env(env: dict, record: dict, origin: str, source_file: "str | None" = None,
               known_roots: "list[str] | tuple[str, ...]" = (), base: "dict | None" = None,
               modules: "dict | None" = None, compilers: "dict | None" = None) -> "tuple[dict, dict]":
    """(the new environment for `record`: its entries first, no other toolkit's left, the scalars
    naming it; the state kept for `off`). `known_roots`: roots the registry knows; `base`: the env
    to switch from when not pristine(env); `modules`: what the module system swapped out;
    `compilers`: host compiler variables the switch also sets."""
    base = pristine(env) if base is None else base
    new = dict(base)
    owner = Owner(list(known_roots) + [record["root"]], base)
    # a module `use module:X` loaded set the toolkit's own entries (CPATH, CMAKE_PREFIX_PATH): they stay
    keep_own = bool(modules and modules.get("loaded"))
    lists = _replaced_lists(base, owner, path_entries(record), record["root"], keep_own)
    scalars = {name: (base.get(name), value) for name, value in _scalar_values(base, record, owner, compilers).items()
               if base.get(name) != value}
    for name, entry in {**scalars, **lists}.items():
        assign(new, name, entry[1])
    state = {"v": STATE_VERSION, "root": record["root"], "version": record["version"],
             "origin": origin, "file": source_file, "scalars": scalars, "lists": lists}
    if modules:
        state["modules"] = modules
    unexported = _unexported(env, set(scalars) | set(lists))
    if unexported:
        state["unexported"] = unexported
    new[STATE_VAR] = encode(state)
    return new, state


def _unexported(env: dict, changed: "set[str]") -> "list[str]":
    """The variables this switch exports that the shell had unexported (CUDASWITCH_UNEXPORTED, or the state)."""
    old = read_state(env)
    names = set(old.get("unexported", ())) if old else set()
    listed = env.get(UNEXPORTED_VAR) or ""
    names.update(n for n in listed[:4096].split() if n in env)
    return sorted(names & changed)


def _replaced_lists(base: dict, owner: Owner, ours: "dict[str, list[str]]", own_root: str,
                    keep_own: bool = False) -> dict:
    """{name: (before, set, how many entries are ours)} of each list that changes: `ours` first, then old
    entries of no toolkit, and the chosen toolkit's compat/ dir (cuda-compat's libcuda, first on purpose
    for an older driver); with `keep_own`, its other entries too."""
    lists = {}
    own = os.path.normpath(own_root)
    compat = os.path.join(own, "compat")
    for name in LISTS:
        before = base.get(name)
        entries = split(before)
        add = ours.get(name, [])
        if name == "PATH" and not entries:  # no PATH or an empty one: the switched shell still runs
            add = add + [d for d in split(os.defpath) if d not in add]  # `ls`; these go at `off` too
        kept = [e for e in entries if not owner(e) or os.path.normpath(e) == compat
                or keep_own and owner(e) == own and e not in add]
        if add or len(kept) != len(entries):
            result = add + kept
            lists[name] = (before, os.pathsep.join(result) if result or name == "PATH" else None, len(add))
    return lists


def _scalar_values(base: dict, record: dict, owner: Owner, compilers: "dict[str, str] | None" = None) -> dict:
    """The value each scalar and flag variable gets (None: unset)."""
    values: "dict[str, str | None]" = {}
    for name in FLAG_VARS:
        flags = without_toolkit_dirs(base.get(name), owner)
        if flags is not None:
            values[name] = flags
    for name, value in (compilers or {}).items():
        if name in FLAG_VARS:  # a -ccbin word goes in front of the flags the user keeps
            value = in_front(value, values.get(name, base.get(name)))
        values[name] = value
    values.update((name, record["root"]) for name in ALWAYS_SET)
    values["CUDACXX"] = record.get("nvcc")
    for name in SCALARS:
        if name not in values and base.get(name) is not None:
            values[name] = record["root"]
    return values


def without_toolkit_dirs(flags: "str | None", owner: Owner) -> "str | None":
    """`flags` without the -I/-L/-isystem words (joined or separate) naming a toolkit's dirs; None
    when it has none. Split on single spaces so every other byte stays as it was."""
    if not flags or ("-I" not in flags and "-L" not in flags and "-isystem" not in flags and "-path=" not in flags):
        return None
    words, out, i = flags.split(" "), [], 0
    while i < len(words):
        word, taken = words[i], 1
        option = next((o for o in DIR_OPTIONS if word.startswith(o)), None)
        directory = word[len(option):] if option else None
        if option and not directory and not option.endswith("=") and i + 1 < len(words):
            directory, taken = words[i + 1], 2
        if not (directory and owner(directory)):
            out += words[i:i + taken]
        i += taken
    return None if len(out) == len(words) else " ".join(out)


def diff(old: dict, new: dict) -> dict:
    """{'set': {name: value}, 'unset': [names]}: what turns `old` into `new`; and 'unexport':
    [names] where a variable the shell had unexported is back at its own value (after `off`)."""
    names = set(old) | set(new)
    changed = {n: new[n] for n in sorted(names) if n in new and old.get(n) != new[n]}
    removed = sorted(n for n in names if n in old and n not in new)
    out = {"set": changed, "unset": removed}
    before = read_state(old) if old.get(STATE_VAR) != new.get(STATE_VAR) else None
    if before and before.get("unexported"):
        still = set((read_state(new) or {}).get("unexported", ()))
        out["unexport"] = [n for n in before["unexported"]
                           if n not in still and n in new and _as_switched(before, old, n)]
    return out


def _as_switched(state: dict, env: dict, name: str) -> bool:
    """Does `name` still hold what the switch set? A value the user changed stays exported: an
    `export` they typed cannot be told apart, and undoing it would hide their entry from builds."""
    entry = state["lists"].get(name) or state["scalars"].get(name)
    return entry is not None and env.get(name) == entry[1]

