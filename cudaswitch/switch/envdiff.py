"""The environment a switch produces, and the reversible diff kept in the shell to undo it.

A switch replaces whatever CUDA the shell had: every entry of another toolkit leaves the path lists
(rc-file exports, a module's leftovers, /usr/local/cuda itself), and the scalars that name a
toolkit name the new one. State lives in one variable (CUDASWITCH_STATE, marshal + base64: both
built in, no json import on the fast path; read back by statecodec's bounded reader, as data that
anyone who can set a variable chooses). For each variable it touched it keeps the value before and
the value it set. Variables the shell had without exporting them are named in the state and given
back unexported. Undoing gives back the value before, byte-exact, where the variable still
holds what cudaswitch set; where the user changed it since, a scalar keeps the user's value and a
list is merged: the user's entries stay where they put them, cudaswitch's go, and the entries it
had removed come back at their old place.
"""

import os

from cudaswitch.switch.listmerge import merged, split as _split
from cudaswitch.switch.statecodec import NotAState, decode, encode
from cudaswitch.switch.toolkitdirs import Owner

STATE_VAR = "CUDASWITCH_STATE"
# Set for the program only, by the hook's functions (and bash.rerun): the variables the shell had
# set without exporting them, exported for this one call so that cudaswitch sees them.
UNEXPORTED_VAR = "CUDASWITCH_UNEXPORTED"
SCALARS = ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT", "CUDA_DIR", "CUDACXX", "CUDAToolkit_ROOT")
# Set on every switch; CUDA_ROOT and CUDA_DIR only where the shell had them (few tools read them).
ALWAYS_SET = ("CUDA_HOME", "CUDA_PATH", "CUDACXX", "CUDAToolkit_ROOT")
LISTS = ("PATH", "LD_LIBRARY_PATH", "CPATH", "LIBRARY_PATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH",
         "CMAKE_PREFIX_PATH", "PKG_CONFIG_PATH", "MANPATH")
# Flag variables a conda env's activation (conda-forge cuda-nvcc) or a build guide fills with its
# toolkit's -I/-L dirs: those words go, so the switched toolkit's headers and libraries win.
FLAG_VARS = ("CFLAGS", "CPPFLAGS", "CXXFLAGS", "LDFLAGS", "CUDAFLAGS", "NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS")
COMPILER_VARS = ("NVCC_CCBIN", "CUDAHOSTCXX")  # the host compiler a switch picks (verify/hostcc)
DIR_OPTIONS = ("--include-path=", "--library-path=", "-isystem", "-I", "-L")
STATE_VERSION = 2
# The only variables a state may name: `off` sets what the state says, so a state naming
# PROMPT_COMMAND, BASH_ENV or PS1 would be code at the next prompt however well it is quoted.
SCALAR_NAMES = frozenset(SCALARS + FLAG_VARS + COMPILER_VARS)
# Who switched: a shell's `use`, a project file, the global default, or a command that judges or
# freezes what `use` would give (verify, a kernel spec, audit's build) and keeps its state in that env.
ORIGINS = ("shell", "project", "global", "verify", "kernel", "audit")
MODULE_KINDS = ("lmod", "modules")
# What a state's modules record may give back to discovery: its inputs, registry.discover.ENV_KEYS
# (written out here because discovery imports this module), and nothing else.
OUTER_NAMES = frozenset(("CUDASWITCH_ROOT", "HOME", "PATH", "CUDA_HOME", "CUDA_PATH", "CONDA_PREFIX", "CONDA_EXE",
                         "VIRTUAL_ENV", "MODULEPATH", "LMOD_CMD", "LMOD_DIR", "MODULES_CMD", "MODULESHOME"))


def read_state(env):
    """The state of the active switch, or None (absent, foreign or corrupt: never fatal)."""
    raw = env.get(STATE_VAR)
    if not raw:
        return None
    try:
        state = decode(raw)
    except NotAState:
        return None
    if isinstance(state, dict) and state.get("v") == 1:
        state = _from_v1(state, env)  # a shell switched by the version before this one
    if not isinstance(state, dict) or state.get("v") != STATE_VERSION:
        return None
    if not _shape_ok(state):
        return None
    return state


def _from_v1(old, env):
    """The v2 form of a v1 state, which kept the replaced scalars (`prev`) and the entries it added
    (`added`) and undid by restoring the one and removing the first occurrence of the other."""
    prev, added = old.get("prev"), old.get("added")
    if not isinstance(prev, dict) or not isinstance(added, dict):
        return None
    scalars = {n: (prev[n], env.get(n)) for n in ("CUDA_HOME", "CUDA_PATH", "CUDACXX", "CUDAToolkit_ROOT")
               if n in prev and isinstance(prev[n], (str, type(None)))}
    lists = {}
    for name in ("PATH", "LD_LIBRARY_PATH"):
        ours = added.get(name)
        if not isinstance(ours, list) or env.get(name) is None:
            continue
        remaining = _split(env.get(name))
        for entry in ours:
            if entry in remaining:
                remaining.remove(entry)
        before = os.pathsep.join(remaining) if remaining else (None if prev.get(name) is None else "")
        lists[name] = (before, env[name], 0)
    return {"v": STATE_VERSION, "root": old.get("root"), "version": old.get("version"),
            "origin": old.get("origin"), "file": old.get("file"), "scalars": scalars, "lists": lists}


def _shape_ok(state):
    """Every entry as switched() writes it, names included: a state from another build, a hand edit
    or an attacker's is foreign. Names become shell code, so a name is one a switch sets; text
    (a toolkit root may hold any byte a path can) only holds no NUL, which no variable can."""
    lists = state.get("lists")
    return (_text(state.get("root"), optional=False) and bool(state["root"]) and _text(state.get("version"))
            and state.get("origin") in ORIGINS and _text(state.get("file"))
            and _entries(state.get("scalars"), SCALAR_NAMES, 2) and _entries(lists, LISTS, 3)
            and all(0 <= ours <= len(_split(mine)) for _, mine, ours in lists.values())
            and _names(state.get("unexported", []), SCALAR_NAMES | set(LISTS))
            and _modules_ok(state.get("modules")))


def _text(value, optional=True):
    return (value is None and optional) or (isinstance(value, str) and "\0" not in value)


def _names(names, allowed):
    return isinstance(names, list) and all(isinstance(n, str) and n in allowed for n in names)


def _entries(table, allowed, width):
    """{name: (before, set[, how many entries are ours])} with names from `allowed`."""
    return isinstance(table, dict) and all(
        name in allowed and isinstance(v, tuple) and len(v) == width and _text(v[0]) and _text(v[1])
        and (width == 2 or (isinstance(v[2], int) and not isinstance(v[2], bool)))
        for name, v in table.items())


def _modules_ok(info):
    """None, or the record modswitch.away() wrote: which module system, the CUDA modules it
    unloaded (names the module command gets as arguments), the marker's dir, and `outer` (what
    discovery reads, as it was before the swap)."""
    if not info:
        return info is None or info == {}
    if not isinstance(info, dict) or info.get("kind") not in MODULE_KINDS or not _text(info.get("dir"), False):
        return False
    unloaded, outer = info.get("unloaded"), info.get("outer", {})
    if not (isinstance(unloaded, list) and unloaded and all(_module_name(m) for m in unloaded)):
        return False
    return isinstance(outer, dict) and all(n in OUTER_NAMES and _text(v) for n, v in outer.items())


def _module_name(name):
    """A loaded module's name as LOADEDMODULES gives it: never an option to the module command."""
    return _text(name, False) and bool(name) and not name.startswith("-") and not any(c.isspace() for c in name)


def encode_state(state):
    return encode(state)


def _assign(env, name, value):
    if value is None:
        env.pop(name, None)
    else:
        env[name] = value


def pristine(env, state=None):
    """The environment as it was before cudaswitch touched it (user changes since kept)."""
    state = read_state(env) if state is None else state
    out = dict(env)
    out.pop(STATE_VAR, None)
    if not state:
        return out
    for name, (before, mine) in state["scalars"].items():
        now = env.get(name)
        if now == mine:
            _assign(out, name, before)
        elif now is not None and name in FLAG_VARS:  # edited since (a build script appended to it)
            _assign(out, name, without_added_ccbin(before, mine, now))
    for name, (before, mine, ours) in state["lists"].items():
        now = env.get(name)
        if now == mine:
            _assign(out, name, before)
        elif now is not None:  # a list the user unset since stays unset
            _assign(out, name, merged(before, mine, now, ours, name))
    return out


def added_ccbin(before, mine):
    """The `-ccbin PATH` words a switch put in front of a flag variable, or None."""
    words = (mine or "").split(" ")
    if words[:1] != ["-ccbin"] or len(words) < 2 or (before or "").split(" ")[:2] == words[:2]:
        return None
    return " ".join(words[:2])


def leads(words, flags):
    """Do `words` open the flag string `flags` (as whole words)?"""
    return bool(words) and (flags == words or (flags or "").startswith(words + " "))


def in_front(words, flags):
    """`words` put in front of a flag string (which may be unset or empty)."""
    return words + " " + flags if flags else words


def without_added_ccbin(before, mine, now):
    """`now` without the -ccbin words the switch added, where they still lead it: `off` must not
    leave cudaswitch's compiler behind for the user's own edits (nvcc takes the last -ccbin)."""
    added = added_ccbin(before, mine)
    if leads(added, now):
        rest = now[len(added) + 1:]
        return rest if rest or before is not None else None
    return now


def before_switch(env):
    """pristine(env), and where `use` swapped a module out, the variables discovery reads as they
    were before that swap: the registry cache built before a `use` stays valid after it."""
    state = read_state(env)
    out = pristine(env, state)
    for name, value in ((state or {}).get("modules") or {}).get("outer", {}).items():
        _assign(out, name, value)
    return out


def path_entries(record):
    """{"PATH": [...], "LD_LIBRARY_PATH": [...]}: what a switch to `record` prepends (its view's
    dirs for a toolkit inside a conda env, else its own)."""
    return {"PATH": list(record.get("env_bin") or record["bin_dirs"]),
            "LD_LIBRARY_PATH": list(record.get("env_lib") or record["lib_dirs"])}


def switched(env, record, origin, source_file=None, known_roots=(), base=None, modules=None, compilers=None):
    """The full new environment for `record` (a registry record), from any current env: the
    toolkit's entries first, no other toolkit's entry left, the scalars naming it.

    `known_roots`: toolkit roots the registry knows (besides what looks like one on disk);
    `base`: the environment to switch from, when it is not pristine(env) (a module unloaded first);
    `modules`: what the module system swapped out, kept in the state for `off`;
    `compilers`: host compiler variables the switch also sets (NVCC_CCBIN or a -ccbin in front of
    NVCC_PREPEND_FLAGS, CUDAHOSTCXX)."""
    base = pristine(env) if base is None else base
    new = dict(base)
    owner = Owner(list(known_roots) + [record["root"]], base)
    lists = _replaced_lists(base, owner, path_entries(record), record["root"])
    scalars = {name: (base.get(name), value) for name, value in _scalar_values(base, record, owner, compilers).items()
               if base.get(name) != value}
    for name, (_, value) in scalars.items():
        _assign(new, name, value)
    for name, (_, value, _) in lists.items():
        _assign(new, name, value)
    state = {"v": STATE_VERSION, "root": record["root"], "version": record["version"],
             "origin": origin, "file": source_file, "scalars": scalars, "lists": lists}
    if modules:
        state["modules"] = modules
    unexported = _unexported(env, set(scalars) | set(lists))
    if unexported:
        state["unexported"] = unexported
    new[STATE_VAR] = encode_state(state)
    return new


def _unexported(env, changed):
    """The variables this switch exports that the shell had set without exporting (PATH in a shell
    started without one): named by the caller in CUDASWITCH_UNEXPORTED, or by the switch before."""
    old = read_state(env)
    names = set(old.get("unexported", ())) if old else set()
    listed = env.get(UNEXPORTED_VAR) or ""
    names.update(n for n in listed[:4096].split() if n in env)
    return sorted(names & changed)


def _replaced_lists(base, owner, ours, own_root):
    """{name: (value before, value set, how many entries are cudaswitch's)} for each list that
    changes: `ours` first, then every entry of the old list that belongs to no toolkit, and the
    chosen toolkit's compat/ dir (cuda-compat's libcuda, put first on purpose for forward
    compatibility on an older driver)."""
    lists = {}
    compat = os.path.join(os.path.normpath(own_root), "compat")
    for name in LISTS:
        before = base.get(name)
        entries = _split(before)
        add = ours.get(name, [])
        if name == "PATH" and not entries:  # no PATH or an empty one: the switched shell still runs
            add = add + [d for d in _split(os.defpath) if d not in add]  # `ls`; these go at `off` too
        kept = [e for e in entries if not owner(e) or os.path.normpath(e) == compat]
        if add or len(kept) != len(entries):
            result = add + kept
            lists[name] = (before, os.pathsep.join(result) if result or name == "PATH" else None, len(add))
    return lists


def _scalar_values(base, record, owner, compilers=None):
    """The value each scalar and flag variable gets (None: unset)."""
    values = {}
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


def without_toolkit_dirs(flags, owner):
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


def diff(old, new):
    """{'set': {name: value}, 'unset': [names]}: what turns `old` into `new`; and 'unexport':
    [names] where a variable the shell had unexported is back at its own value (after `off`)."""
    names = set(old) | set(new)
    changed = {n: new[n] for n in sorted(names) if n in new and old.get(n) != new[n]}
    removed = sorted(n for n in names if n in old and n not in new)
    out = {"set": changed, "unset": removed}
    before = read_state(old) if old.get(STATE_VAR) != new.get(STATE_VAR) else None
    if before and before.get("unexported"):
        after = read_state(new) or {}
        still = set(after.get("unexported", ()))
        out["unexport"] = [n for n in before["unexported"] if n not in still and n in new]
    return out


def applied(env, change):
    """The environment after a shell evaluated `change` (a diff()): what a child of that shell sees."""
    new = dict(env)
    new.update(change["set"])
    for name in change["unset"] + change.get("unexport", []):
        new.pop(name, None)
    return new
