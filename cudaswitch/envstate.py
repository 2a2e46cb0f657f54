"""The state a switch keeps in the shell (CUDASWITCH_STATE), read back as data, and the environment as
it was before cudaswitch touched it. Base layer: discovery keys its cache on the environment before
any switch. marshal + base64 (no json import on the fast path), decoded by statecodec's bounded
reader: anyone who can set a variable chooses its bytes."""

import os

from cudaswitch.statecodec import NotAState, decode

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeGuard

    from cudaswitch.toolkit import Env

STATE_VAR = "CUDASWITCH_STATE"
SCALARS = ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT", "CUDA_DIR", "CUDACXX", "CUDAToolkit_ROOT")
LISTS = ("PATH", "LD_LIBRARY_PATH", "CPATH", "LIBRARY_PATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH",
         "CMAKE_PREFIX_PATH", "PKG_CONFIG_PATH", "MANPATH")
# Flag variables a conda env's activation (conda-forge cuda-nvcc) or a build guide fills with its
# toolkit's -I/-L dirs: those words go, so the switched toolkit's headers and libraries win.
FLAG_VARS = ("CFLAGS", "CPPFLAGS", "CXXFLAGS", "LDFLAGS", "CUDAFLAGS", "NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS")
COMPILER_VARS = ("NVCC_CCBIN", "CUDAHOSTCXX")  # the host compiler a switch picks (verify/pipeline)
STATE_VERSION = 2
# The only variables a state may name: `off` sets what the state says, so a state naming
# PROMPT_COMMAND, BASH_ENV or PS1 would be code at the next prompt however well it is quoted.
SCALAR_NAMES = frozenset(SCALARS + FLAG_VARS + COMPILER_VARS)
NAMES = SCALAR_NAMES | frozenset(LISTS)
# Who switched: a shell's `use`, a project file, the global default, or a command that judges or
# freezes what `use` would give (verify, a kernel spec, audit's build) and keeps its state in that env.
ORIGINS = ("shell", "project", "global", "verify", "kernel", "audit")
MODULE_KINDS = ("lmod", "modules")
# What a state's modules record may give back to discovery: its inputs, registry.discover.ENV_KEYS
# (written out here: discovery imports this module), and nothing else.
OUTER_NAMES = frozenset(("CUDASWITCH_ROOT", "HOME", "PATH", "CUDA_HOME", "CUDA_PATH", "CONDA_PREFIX", "CONDA_EXE",
                         "VIRTUAL_ENV", "MODULEPATH", "LMOD_CMD", "LMOD_DIR", "MODULES_CMD", "MODULESHOME",
                         "SPACK_ROOT", "SPACK_USER_CONFIG_PATH", "SPACK_SYSTEM_CONFIG_PATH",
                         "SPACK_DISABLE_LOCAL_CONFIG", "USER", "LOGNAME"))


def read_state(env: "Env") -> "dict | None":
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
    return state if isinstance(state, dict) and state.get("v") == STATE_VERSION and _shape_ok(state) else None


def _from_v1(old: dict, env: "Env") -> "dict | None":
    """The v2 form of a v1 state (the replaced scalars `prev`, the entries it `added`)."""
    prev, added = old.get("prev"), old.get("added")
    if not isinstance(prev, dict) or not isinstance(added, dict):
        return None
    scalars = {n: (prev[n], env.get(n)) for n in ("CUDA_HOME", "CUDA_PATH", "CUDACXX", "CUDAToolkit_ROOT")
               if n in prev and isinstance(prev[n], (str, type(None)))}
    lists: "dict[str, tuple[str | None, str, int]]" = {}
    for name in ("PATH", "LD_LIBRARY_PATH"):
        ours = added.get(name)
        if not isinstance(ours, list) or env.get(name) is None:
            continue
        remaining = split(env.get(name))
        for entry in ours:
            if entry in remaining:
                remaining.remove(entry)
        before = os.pathsep.join(remaining) if remaining else (None if prev.get(name) is None else "")
        lists[name] = (before, env[name], 0)
    return {"v": STATE_VERSION, "root": old.get("root"), "version": old.get("version"),
            "origin": old.get("origin"), "file": old.get("file"), "scalars": scalars, "lists": lists}


def _shape_ok(state: dict) -> bool:
    """Every entry as switch_env() writes it: anything else is foreign. Names become shell code, so a
    name is one a switch sets; text (a root may hold any byte a path can) only holds no NUL."""
    lists: "Any" = state.get("lists")  # checked by _entries before its values are read
    unexported = state.get("unexported", [])
    return (_text(state.get("root"), optional=False) and bool(state["root"]) and _text(state.get("version"))
            and state.get("origin") in ORIGINS and _text(state.get("file"))
            and _entries(state.get("scalars"), SCALAR_NAMES, 2) and _entries(lists, LISTS, 3)
            and all(0 <= ours <= len(split(mine)) for _, mine, ours in lists.values())
            and isinstance(unexported, list) and all(isinstance(n, str) and n in NAMES for n in unexported)
            and _modules_ok(state.get("modules")))


def _text(value: object, optional: bool = True) -> bool:
    return (value is None and optional) or (isinstance(value, str) and "\0" not in value)


def _entries(table: object, allowed: "frozenset[str] | tuple[str, ...]", width: int) -> bool:
    """{name: (before, set[, how many entries are ours])} with names from `allowed`."""
    return isinstance(table, dict) and all(
        name in allowed and isinstance(v, tuple) and len(v) == width and _text(v[0]) and _text(v[1])
        and (width == 2 or (isinstance(v[2], int) and not isinstance(v[2], bool)))
        for name, v in table.items())


def _modules_ok(info: object) -> bool:
    """None, or the record modswitch.away() wrote: module system, the CUDA modules it unloaded (arguments
    to the module command), the marker's dir, and `outer` (what discovery reads, as before the swap)."""
    if not info:
        return info is None or info == {}
    if not isinstance(info, dict) or info.get("kind") not in MODULE_KINDS or not _text(info.get("dir"), False):
        return False
    unloaded, outer, loaded = info.get("unloaded"), info.get("outer", {}), info.get("loaded")
    # `loaded`: the module `use module:X` loaded, when it did (then nothing need have been unloaded)
    if loaded is not None and not (isinstance(loaded, list) and len(loaded) == 1 and _module_name(loaded[0])):
        return False
    if not (isinstance(unloaded, list) and (unloaded or loaded) and all(_module_name(m) for m in unloaded)):
        return False
    return isinstance(outer, dict) and all(n in OUTER_NAMES and _text(v) for n, v in outer.items())


def _module_name(name: str) -> bool:
    """A loaded module's name as LOADEDMODULES gives it: never an option to the module command."""
    return (_text(name, False) and bool(name) and not name.startswith("-") and name.isprintable()
            and not any(c.isspace() for c in name))  # printable: it is quoted in notes on a terminal


def assign(env: "dict[str, str]", name: str, value: "str | None") -> None:
    if value is None:
        env.pop(name, None)
    else:
        env[name] = value


def pristine(env: "Env", state: "dict | None" = None) -> "dict[str, str]":
    """The environment as it was before cudaswitch touched it (user changes since kept)."""
    state = read_state(env) if state is None else state
    out = dict(env)
    out.pop(STATE_VAR, None)
    if not state:
        return out
    for name, (before, mine) in state["scalars"].items():
        now = env.get(name)
        if now == mine:
            assign(out, name, before)
        elif now is not None and name in FLAG_VARS:  # edited since (a build script appended to it)
            assign(out, name, without_added_ccbin(before, mine, now))
    for name, (before, mine, ours) in state["lists"].items():
        now = env.get(name)
        if now == mine:
            assign(out, name, before)
        elif now is not None:  # a list the user unset since stays unset
            assign(out, name, merged(before, mine, now, ours, name))
    return out


def added_ccbin(before: "str | None", mine: "str | None") -> "str | None":
    """The `-ccbin PATH` words a switch put in front of a flag variable, or None."""
    words = (mine or "").split(" ")
    if words[:1] != ["-ccbin"] or len(words) < 2 or (before or "").split(" ")[:2] == words[:2]:
        return None
    return " ".join(words[:2])


def leads(words: "str | None", flags: "str | None") -> "TypeGuard[str]":
    """Do `words` open the flag string `flags` (as whole words)?"""
    return bool(words) and (flags == words or (flags or "").startswith((words or "") + " "))


def in_front(words: str, flags: "str | None") -> str:
    """`words` put in front of a flag string (which may be unset or empty)."""
    return words + " " + flags if flags else words


def without_added_ccbin(before: "str | None", mine: "str | None", now: str) -> "str | None":
    """`now` without the -ccbin words the switch added, where they still lead it: `off` must not leave
    cudaswitch's compiler behind the user's own edits (nvcc takes the last -ccbin)."""
    added = added_ccbin(before, mine)
    if leads(added, now):
        rest = now[len(added) + 1:]
        return rest if rest or before is not None else None
    return now


def before_switch(env: "Env") -> "dict[str, str]":
    """pristine(env), with what discovery reads as before a module swap (the registry cache stays valid):
    the state's claim, read by discovery only where it keys the registry cudaswitch built."""
    state = read_state(env)
    out = pristine(env, state)
    for name, value in ((state or {}).get("modules") or {}).get("outer", {}).items():
        assign(out, name, value)
    return out


# Merging a user's edits to a path list with what a switch did to it, for `off`: the user's
# entries stay where they put them, the switch's go, the entries it removed come back.
MAX_ALIGN = 1 << 20  # cells of the edit-script table: a hostile state's list cannot stall `off`


def split(value: "str | None") -> "list[str]":
    return [] if not value else value.split(os.pathsep)


def merged(before: "str | None", mine: "str | None", now: "str | None", ours: int,
           name: str = "PATH") -> "str | None":
    """`before` with the user's edits to `mine` (which began with `ours` cudaswitch entries) kept: removed
    entries return to their gap; the user's new ones stay in theirs, ahead of returning ones except at
    the end (`export X=new:$X` and `X=$X:new` come out as without cudaswitch). An empty entry (the
    current dir) of `before` comes back, but the user's edits add none (`X=new:$X` on an emptied list)."""
    set_, cur = split(mine), split(now)
    added = set_[:ours]
    removed = _returning(split(before), set_[ours:])
    out: "list[str]" = []
    pending: "list[str]" = []
    for op, m, c in _align(set_, cur):
        if op == "ins":
            if cur[c]:  # an empty entry the edit made goes (see above)
                pending.append(cur[c])
            continue
        out += pending
        pending = []
        if m < len(added):
            continue  # cudaswitch's own entry: it goes
        out += removed[m - len(added)]
        if op == "keep":
            out.append(cur[c])
    if not set_ and cur[-1:] == [""]:  # `X=new:$X` on the list the switch had emptied: in front
        out += pending + removed[-1]
    else:
        out += removed[-1] + pending
    if out or name == "PATH":
        return os.pathsep.join(out)
    return "" if before == "" else None  # never "" where it was unset: an empty CPATH entry is "."


def _returning(old: "list[str]", kept: "list[str]") -> "list[list[str]]":
    """The entries of `old` a switch took out, by the gap of `kept` they return to (list i before kept[i])."""
    removed: "list[list[str]]" = [[] for _ in range(len(kept) + 1)]
    k = 0
    for entry in old:
        if k < len(kept) and entry == kept[k]:
            k += 1
        else:
            removed[k].append(entry)
    return removed


def _align(a: "list[str]", b: "list[str]") -> "list[tuple[str, Any, Any]]":  # an index, or None where op has none
    """An edit script turning a into b: ("keep", i, j), ("del", i, None), ("ins", None, j), from a longest
    common subsequence (common prefix and suffix first: user edits are mostly prepends and appends)."""
    start = 0
    while start < len(a) and start < len(b) and a[start] == b[start]:
        start += 1
    end_a, end_b = len(a), len(b)
    while end_a > start and end_b > start and a[end_a - 1] == b[end_b - 1]:
        end_a, end_b = end_a - 1, end_b - 1
    mid_a, mid_b = a[start:end_a], b[start:end_b]
    rows, cols = len(mid_a), len(mid_b)
    if rows * cols > MAX_ALIGN:  # a state's list or an edit that big: the middle is replaced whole
        return ([("keep", i, i) for i in range(start)] + [("del", start + i, None) for i in range(rows)]
                + [("ins", None, start + j) for j in range(cols)]
                + [("keep", end_a + n, end_b + n) for n in range(len(a) - end_a)])
    lcs = [[0] * (cols + 1) for _ in range(rows + 1)]
    for i in range(rows - 1, -1, -1):
        for j in range(cols - 1, -1, -1):
            lcs[i][j] = lcs[i + 1][j + 1] + 1 if mid_a[i] == mid_b[j] else max(lcs[i + 1][j], lcs[i][j + 1])
    ops: "list[tuple[str, Any, Any]]" = [("keep", i, i) for i in range(start)]
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
