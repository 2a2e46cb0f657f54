"""The environment a switch produces, and the reversible diff kept in the shell to undo it.

A switch replaces whatever CUDA the shell had: every entry of another toolkit leaves the path lists
(rc-file exports, a module's leftovers, /usr/local/cuda itself), and the scalars that name a
toolkit name the new one. State lives in one variable (CUDASWITCH_STATE, marshal + base64: both
built in, no json import on the fast path). For each variable it touched it keeps the value before
and the value it set. Undoing gives back the value before, byte-exact, where the variable still
holds what cudaswitch set; where the user changed it since, a scalar keeps the user's value and a
list is merged: the user's entries stay where they put them, cudaswitch's go, and the entries it
had removed come back at their old place.
"""

import binascii
import marshal
import os

from cudaswitch.switch.toolkitdirs import Owner

STATE_VAR = "CUDASWITCH_STATE"
SCALARS = ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT", "CUDA_DIR", "CUDACXX", "CUDAToolkit_ROOT")
# Set on every switch; CUDA_ROOT and CUDA_DIR only where the shell had them (few tools read them).
ALWAYS_SET = ("CUDA_HOME", "CUDA_PATH", "CUDACXX", "CUDAToolkit_ROOT")
LISTS = ("PATH", "LD_LIBRARY_PATH", "CPATH", "LIBRARY_PATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH",
         "CMAKE_PREFIX_PATH", "PKG_CONFIG_PATH", "MANPATH")
# Flag variables a conda env's activation (conda-forge cuda-nvcc) or a build guide fills with its
# toolkit's -I/-L dirs: those words go, so the switched toolkit's headers and libraries win.
FLAG_VARS = ("CFLAGS", "CPPFLAGS", "CXXFLAGS", "LDFLAGS", "CUDAFLAGS", "NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS")
DIR_OPTIONS = ("--include-path=", "--library-path=", "-isystem", "-I", "-L")
STATE_VERSION = 2


def read_state(env):
    """The state of the active switch, or None (absent, foreign or corrupt: never fatal)."""
    raw = env.get(STATE_VAR)
    if not raw:
        return None
    try:
        state = marshal.loads(binascii.a2b_base64(raw.encode("ascii")))
    except (ValueError, EOFError, TypeError, UnicodeError, binascii.Error):
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
    """Every entry as switched() writes it: a state from another build or a hand edit is foreign."""
    text = (str, type(None))
    scalars, lists = state.get("scalars"), state.get("lists")
    if not isinstance(scalars, dict) or not isinstance(lists, dict) or not isinstance(state.get("root"), str):
        return False
    return all(isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], text) and isinstance(v[1], text)
               for v in scalars.values()) and all(
        isinstance(v, tuple) and len(v) == 3 and isinstance(v[0], text) and isinstance(v[1], text)
        and isinstance(v[2], int) for v in lists.values()) and isinstance(state.get("modules") or {}, dict)


def encode_state(state):
    return binascii.b2a_base64(marshal.dumps(state), newline=False).decode("ascii")


def _split(value):
    return [] if not value else value.split(os.pathsep)


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


def merged(before, mine, now, ours, name="PATH"):
    """`before` with the user's edits to `mine` (which began with `ours` cudaswitch entries) kept.

    The entries cudaswitch removed return in the gap they came from; the user's new entries stay in
    the gap they were put in, ahead of returning ones except at the end (so `export X=new:$X` and
    `X=$X:new` come out as they would have without cudaswitch)."""
    old, set_, cur = _split(before), _split(mine), _split(now)
    added, kept = set_[:ours], set_[ours:]
    removed = [[] for _ in range(len(kept) + 1)]
    k = 0
    for entry in old:
        if k < len(kept) and entry == kept[k]:
            k += 1
        else:
            removed[k].append(entry)
    out, pending = [], []
    for op, m, c in _align(set_, cur):
        if op == "ins":
            pending.append(cur[c])
            continue
        out += pending
        pending = []
        if m < len(added):
            continue  # cudaswitch's own entry: it goes
        out += removed[m - len(added)]
        if op == "keep":
            out.append(cur[c])
    out += removed[len(kept)] + pending
    if out or name == "PATH":
        return os.pathsep.join(out)
    return "" if before == "" else None  # never "" where it was unset: an empty CPATH entry is "."


def _align(a, b):
    """An edit script turning list a into list b: ("keep", i, j), ("del", i, None), ("ins", None, j),
    in order, from a longest common subsequence (common prefix and suffix taken first: user edits
    are mostly prepends and appends, so the quadratic part stays tiny)."""
    start = 0
    while start < len(a) and start < len(b) and a[start] == b[start]:
        start += 1
    end_a, end_b = len(a), len(b)
    while end_a > start and end_b > start and a[end_a - 1] == b[end_b - 1]:
        end_a, end_b = end_a - 1, end_b - 1
    mid_a, mid_b = a[start:end_a], b[start:end_b]
    rows, cols = len(mid_a), len(mid_b)
    lcs = [[0] * (cols + 1) for _ in range(rows + 1)]
    for i in range(rows - 1, -1, -1):
        for j in range(cols - 1, -1, -1):
            lcs[i][j] = lcs[i + 1][j + 1] + 1 if mid_a[i] == mid_b[j] else max(lcs[i + 1][j], lcs[i][j + 1])
    ops = [("keep", i, i) for i in range(start)]
    i = j = 0
    while i < rows or j < cols:
        if i < rows and j < cols and mid_a[i] == mid_b[j]:
            ops.append(("keep", start + i, start + j))
            i, j = i + 1, j + 1
        elif j < cols and (i == rows or lcs[i][j + 1] >= lcs[i + 1][j]):
            ops.append(("ins", None, start + j))
            j += 1
        else:
            ops.append(("del", start + i, None))
            i += 1
    ops += [("keep", end_a + n, end_b + n) for n in range(len(a) - end_a)]
    return ops


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
    new[STATE_VAR] = encode_state(state)
    return new


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
    """{'set': {name: value}, 'unset': [names]}: what turns `old` into `new`."""
    names = set(old) | set(new)
    changed = {n: new[n] for n in sorted(names) if n in new and old.get(n) != new[n]}
    removed = sorted(n for n in names if n in old and n not in new)
    return {"set": changed, "unset": removed}


def applied(env, change):
    """The environment after a shell evaluated `change` (a diff()): what a child of that shell sees."""
    new = dict(env)
    new.update(change["set"])
    for name in change["unset"]:
        new.pop(name, None)
    return new
