"""The environment a switch produces, and the reversible diff kept in the shell to undo it.

State lives in one variable (CUDASWITCH_STATE, marshal + base64: both built in, no json import on
the fast path). It holds the values cudaswitch replaced (`prev`) and the list entries it added
(`added`). Undoing removes the first occurrence of each added entry, so entries the user added
meanwhile survive, and restores every replaced scalar exactly (None = it was unset).
"""

import binascii
import marshal
import os

STATE_VAR = "CUDASWITCH_STATE"
SCALARS = ("CUDA_HOME", "CUDA_PATH", "CUDACXX", "CUDAToolkit_ROOT", "NVCC_CCBIN", "CUDAHOSTCXX")
LISTS = ("PATH", "LD_LIBRARY_PATH")
STATE_VERSION = 1


def read_state(env):
    """The state of the active switch, or None (absent, foreign or corrupt: never fatal)."""
    raw = env.get(STATE_VAR)
    if not raw:
        return None
    try:
        state = marshal.loads(binascii.a2b_base64(raw.encode("ascii")))
    except (ValueError, EOFError, TypeError, UnicodeError, binascii.Error):
        return None
    if not isinstance(state, dict) or state.get("v") != STATE_VERSION:
        return None
    if not isinstance(state.get("prev"), dict) or not isinstance(state.get("added"), dict):
        return None
    return state


def encode_state(state):
    return binascii.b2a_base64(marshal.dumps(state), newline=False).decode("ascii")


def _remove_first(entries, added):
    entries = list(entries)
    for entry in added:
        if entry in entries:
            entries.remove(entry)
    return entries


def _split(value):
    return [] if not value else value.split(os.pathsep)


def pristine(env, state=None):
    """The environment as it was before cudaswitch touched it (user changes since kept)."""
    state = read_state(env) if state is None else state
    out = dict(env)
    out.pop(STATE_VAR, None)
    if not state:
        return out
    for name in SCALARS:
        if name in state["prev"]:
            _assign(out, name, state["prev"][name])
    for name in LISTS:
        added = state["added"].get(name) or []
        if not added:
            continue
        remaining = _remove_first(_split(env.get(name)), added)
        prev = state["prev"].get(name)  # None (unset), "" (empty) or 1 (had entries)
        _assign(out, name, os.pathsep.join(remaining) if remaining else (None if prev is None else ""))
    return out


def _assign(env, name, value):
    if value is None:
        env.pop(name, None)
    else:
        env[name] = value


def path_entries(record):
    """{"PATH": [...], "LD_LIBRARY_PATH": [...]}: what a switch to `record` prepends (its view's
    dirs for a toolkit inside a conda env, else its own)."""
    return {"PATH": list(record.get("env_bin") or record["bin_dirs"]),
            "LD_LIBRARY_PATH": list(record.get("env_lib") or record["lib_dirs"])}


def switched(env, record, origin, source_file=None, compilers=None):
    """The full new environment for `record` (a registry record), from any current env.
    `compilers`: host compiler variables the switch also sets (NVCC_CCBIN, CUDAHOSTCXX)."""
    base = pristine(env)
    new = dict(base)
    added = path_entries(record)
    prev = {}
    for name in LISTS:
        value = base.get(name)
        prev[name] = 1 if value else value  # the entries themselves stay in the variable
        if added[name]:
            new[name] = os.pathsep.join(added[name] + _split(base.get(name)))
    values = {
        "CUDA_HOME": record["root"],
        "CUDA_PATH": record["root"],
        "CUDACXX": record.get("nvcc"),
        "CUDAToolkit_ROOT": record["root"],
    }
    values.update(compilers or {})
    for name, value in values.items():
        prev[name] = base.get(name)
        _assign(new, name, value)
    state = {"v": STATE_VERSION, "root": record["root"], "version": record["version"],
             "origin": origin, "file": source_file, "prev": prev, "added": added}
    new[STATE_VAR] = encode_state(state)
    return new


def diff(old, new):
    """{'set': {name: value}, 'unset': [names]}: what turns `old` into `new`."""
    names = set(old) | set(new)
    changed = {n: new[n] for n in sorted(names) if n in new and old.get(n) != new[n]}
    removed = sorted(n for n in names if n in old and n not in new)
    return {"set": changed, "unset": removed}
