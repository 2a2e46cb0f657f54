"""Switching away from a loaded CUDA module through the module system itself, and back.

`use` over a loaded CUDA module has the shell's module system (Lmod or Environment Modules) swap it
for a marker, `cuda/cudaswitch` (sets nothing; in the cache dir, appended to MODULEPATH), so
`module list` stays true. The user's `module unload cuda`, `purge` or another CUDA module's load
removes the marker, and `off` then reloads nothing; while it is loaded, `off` swaps it back.

A swap there and back changes the module system's own account (_ModuleTable00N_, __LMOD_*,
__MODULES_*, LOADEDMODULES, _LMFILES_, MODULEPATH), so the swap records what it changed; when `off`
finds those as the swap left them and the reload gives back the same modules, they get their old
values byte for byte, if the record carries this user's seal and adds no MODULEPATH dir.

`use module:12.9` typed by the user loads the module with the module system's own command (a CUDA
module loaded before is unloaded first, as Lmod's family swap would); `off`, or another `use`,
unloads it and reloads what it replaced. A project file's `module:12.9` only selects the toolkit;
without a module command, `use module:12.9` says so and switches by the variables alone."""

import os

from cudaswitch.cache import read_private, write_file
from cudaswitch.envstate import assign
from cudaswitch.switch.active import loaded_cuda_modules
from cudaswitch.errors import CudaSwitchError
from cudaswitch.paths import Paths

MARKER = "cuda/cudaswitch"
MARKER_TEXT = {
    "lmod": 'whatis("CUDA selected by `cudaswitch use`; `cudaswitch current` says which")\nfamily("cuda")\n',
    "modules": "#%Module1.0\nmodule-whatis {CUDA selected by `cudaswitch use`; `cudaswitch current` says which}\n",
}
MARKER_FILE = {"lmod": "cudaswitch.lua", "modules": "cudaswitch"}
TIMEOUT = 30.0
# The module system's own variables: what it loaded, from where, and its reference counts.
ACCOUNT_NAMES = ("LOADEDMODULES", "_LMFILES_", "MODULEPATH")
ACCOUNT_PREFIXES = ("_ModuleTable", "__LMOD_", "LMOD_FAMILY_", "__MODULES_")


def foreign_modules(env: dict) -> "list[str]":
    """The loaded CUDA modules that are not cudaswitch's marker."""
    return [m for m in loaded_cuda_modules(env) if m != MARKER]


def swap(paths: Paths, base: dict, recorded: object, load: "str | None" = None) -> "tuple[dict, dict | None]":
    """The plan's one call for modules: (base with the CUDA modules swapped as this switch needs, the
    record for the state). `recorded`: an earlier switch's record, kept while still in place and
    wanted; `load`: the module a `use module:X` asked for."""
    from cudaswitch.registry.discover import ENV_KEYS

    modules = valid(recorded)
    if modules and not in_place(modules, base):
        modules = None  # the user unloaded or replaced it: nothing of before is to reload
    if modules and (modules.get("loaded") or [None])[0] != load:  # "loaded": None is no load
        base, modules = back(base, modules), None  # undone first, as `off` would
    if modules is None and (load or foreign_modules(base)):
        outer = {name: base.get(name) for name in ENV_KEYS}
        base, modules = away(paths, base, load)
        if modules is not None:
            modules["outer"] = outer
            modules["seal"] = seal_of(paths, modules)
    return base, modules


def in_place(info: dict, env: dict) -> bool:
    """Is what the switch did to the modules still there (the marker, or the module it loaded)?"""
    wanted = (info.get("loaded") or [MARKER])[0]
    return wanted in loaded_cuda_modules(env)


def away(paths: Paths, env: dict, load: "str | None" = None) -> "tuple[dict, dict | None]":
    """(env with the CUDA modules swapped for the marker or `load`, the record for `off`), or (env, None)."""
    loaded = foreign_modules(env)
    if not loaded and not load or loaded == [load]:
        return env, None
    from cudaswitch.registry.sources import modules

    # a load goes to the shell's own module system only: one guessed on disk would load into a shell
    # without a `module` function, where `module list` cannot show it
    shells_own = any(env.get(n) for n in ("LMOD_CMD", "MODULES_CMD", "MODULESHOME"))
    command = modules.module_command(env) if shells_own or not load else None
    if command is None and load:
        from cudaswitch import render

        render.message("cudaswitch: no module system in this shell ($LMOD_CMD and $MODULES_CMD are unset): "
                       "%s is not loaded; switching to its toolkit without it" % load)
        return env, None
    if command is None:
        raise CudaSwitchError("%s is loaded, but no module command is reachable to unload it" % loaded[0],
                              "run `module unload %s` first" % loaded[0])
    if load:
        new, directory = _steps(command, env, ([["unload", *loaded]] if loaded else []) + [["load", load]]), ""
        if load not in loaded_cuda_modules(new):
            raise CudaSwitchError("module load %s did not load it (LOADEDMODULES: %s)"
                                  % (load, new.get("LOADEDMODULES")),
                                  "`module load %s` shows the module system's own error" % load)
    else:
        directory = _marker_dir(paths, command[0])
        steps = [["switch", loaded[0], MARKER]] if len(loaded) == 1 else [["unload", *loaded], ["load", MARKER]]
        dirs = _dirs(env.get("MODULEPATH"))
        new = _steps(command, dict(env, MODULEPATH=":".join(dirs + ([] if directory in dirs else [directory]))), steps)
    return new, {"kind": command[0], "unloaded": loaded, **({"loaded": [load]} if load else {}), "dir": directory,
                 "account": account_changes(env, new), "repeats": _repeats(env, new)}


def _repeats(before: dict, after: dict) -> "dict[str, str]":
    """{name: value before} of each path list with a repeated entry the module system changed: Lmod
    keeps one of each, and `off` gives the list back as the user had it."""
    return {n: v for n, v in before.items() if after.get(n) != v and ":" in v and len(set(v.split(":"))) <
            v.count(":") + 1}


def account_names(*envs: dict) -> "list[str]":
    """The module system's own variables present in any of `envs`."""
    names = {n for env in envs for n in env if n in ACCOUNT_NAMES or n.startswith(ACCOUNT_PREFIXES)}
    return sorted(names)


def account_changes(before: dict, after: dict) -> "dict[str, list]":
    """{name: [before, after]} for each module-system variable the swap changed (None: not set)."""
    return {n: [before.get(n), after.get(n)] for n in account_names(before, after) if before.get(n) != after.get(n)}


def valid(info: object) -> "dict | None":
    """The module record of a state, less an account that is not one (an older release's, or edited): `off`
    then leaves the module system's variables as its reload sets them. None for no record."""
    if not isinstance(info, dict) or not info:
        return None
    account = info.get("account", {})
    if isinstance(account, dict) and all(
            isinstance(n, str) and (n in ACCOUNT_NAMES or n.startswith(ACCOUNT_PREFIXES)) and isinstance(pair, list)
            and len(pair) == 2 and all(v is None or isinstance(v, str) for v in pair) for n, pair in account.items()):
        return info
    return {k: v for k, v in info.items() if k != "account"}


def back(env: dict, info: object) -> dict:
    """env with the unloaded modules loaded again (and the one `use module:X` loaded unloaded), if the
    user left the switch's module in place; the marker's MODULEPATH dir goes either way."""
    info = valid(info)
    if not info:
        return env
    reloaded = in_place(info, env)
    new = _undone(info, env) if reloaded else dict(env)
    if info["dir"]:
        entries = [d for d in (new.get("MODULEPATH") or "").split(":") if d != info["dir"]]
        if entries or new.get("MODULEPATH") is not None:
            new["MODULEPATH"] = ":".join(entries)
    sealed = is_sealed(Paths(env), info)
    if reloaded and info.get("account") and sealed:
        new = _account_restored(env, new, info["account"])
    repeats = info.get("repeats") if reloaded and sealed else None
    for name, before in (repeats if isinstance(repeats, dict) else {}).items():
        # Lmod keeps each entry once, where it first appears: when only the repeats differ, they come back
        if isinstance(before, str) and new.get(name) == ":".join(dict.fromkeys(before.split(":"))):
            new[name] = before
    return new


def _undone(info: dict, env: dict) -> dict:
    """env with the switch's module swapped back for those it replaced, by the module system."""
    from cudaswitch.registry.sources import modules

    ours = (info.get("loaded") or [MARKER])[0]
    command = modules.module_command(env)
    if command is None:
        raise CudaSwitchError("cannot unload %s: no module command is reachable" % ours)
    first, rest = (info["unloaded"] or [None])[0], info["unloaded"][1:]
    steps = ([["switch", ours, first]] if first else [["unload", ours]]) + ([["load", *rest]] if rest else [])
    return _steps(command, env, steps, "`module unload %s`, then `cudaswitch off` restores the rest without it" % ours)


def swap_note(info: dict) -> str:
    """What `use` did to the modules, for its note on stderr."""
    if info.get("loaded"):
        replaced = " in place of %s" % ", ".join(info["unloaded"]) if info["unloaded"] else ""
        return "loaded module %s%s (`off` unloads it)" % (info["loaded"][0], replaced)
    return "swapped module %s for %s (`off` loads it again)" % (", ".join(info["unloaded"]), MARKER)


def off_note(info: dict, env: dict) -> str:
    """What `off` does with the modules `use` swapped, or why it leaves them."""
    ours = (info.get("loaded") or [MARKER])[0]
    if not in_place(info, env) and info.get("loaded"):
        return "not unloading %s: it was unloaded or replaced since `use`" % ours
    if not in_place(info, env):
        return "not loading %s again: %s was unloaded or replaced since `use`" % (", ".join(info["unloaded"]), ours)
    if info.get("loaded"):
        again = "; loading %s again" % ", ".join(info["unloaded"]) if info["unloaded"] else ""
        return "unloading module %s%s" % (ours, again)
    return "loading module %s again" % ", ".join(info["unloaded"])


def _account_restored(at_off: dict, new: dict, account: "dict[str, list]") -> dict:
    """`new` with the module system's variables as before the swap, when nothing but the swap changed
    them and the reload loaded the same modules again; else `new` as the module system made it."""
    untouched = all(at_off.get(n) == after for n, (_, after) in account.items())
    loaded = account.get("LOADEDMODULES", [at_off.get("LOADEDMODULES")])[0]
    if not untouched or (new.get("LOADEDMODULES") or "") != (loaded or ""):
        return new
    # The next `module load` reads MODULEPATH's Lua: the byte-exact value may order and repeat what
    # the shell had and the reload gave, never add a dir (whatever a record says).
    have = set(_dirs(at_off.get("MODULEPATH"))) | set(_dirs(new.get("MODULEPATH")))
    if not set(_dirs(account.get("MODULEPATH", [None])[0])) <= have:
        return new
    return _apply(new, {n: account[n][0] if n in account else at_off.get(n) for n in account_names(at_off, new)})


def _steps(command: "tuple[str, list[str]]", env: dict, steps: "list[list[str]]", hint: "str | None" = None) -> dict:
    """env after the module system ran `module ARGS` for each ARGS of `steps`, in turn."""
    from cudaswitch.registry.sources import modules

    for args in steps:
        try:
            env = _apply(env, modules.run_module(command, args, env, TIMEOUT))
        except OSError as exc:
            raise CudaSwitchError("module %s failed: %s" % (" ".join(args), exc), hint) from None
    return env


def _apply(env: dict, changes: "dict[str, str | None]") -> dict:
    new = dict(env)
    for name, value in changes.items():
        assign(new, name, value)
    return new


def _dirs(modulepath: "str | None") -> "list[str]":
    return [d for d in (modulepath or "").split(":") if d]


def _marker_dir(paths: Paths, kind: str) -> str:
    """The MODULEPATH dir holding the marker modulefile for this module system, written once."""
    directory = os.path.join(paths.cache_dir, "modulefiles-" + kind)
    path = os.path.join(directory, "cuda", MARKER_FILE[kind])
    text = MARKER_TEXT[kind].encode()
    if read_private(path, len(text)) == text:
        return directory
    try:  # Lmod skips a modulefile others cannot read; the cache dir above stays 0700 all the same
        write_file(path, text, mode=0o644)
        for step in (directory, os.path.dirname(path)):
            os.chmod(step, 0o755)
    except OSError as exc:
        raise CudaSwitchError("cannot write the module marker %s: %s" % (path, exc.strerror)) from None
    return directory


# The module record's seal: `off` restores the module system's variables byte for byte from the
# record (_ModuleTable00N_ is Lua Lmod runs), and the record lives in CUDASWITCH_STATE, which anyone
# who can set a variable chooses. So it carries a digest keyed by a private file beside the marker;
# an unsealed record still reloads its modules, by the module system, which keeps its own account.
KEY_FILE = "module-record.key"
KEY_BYTES = 32


def is_sealed(paths: Paths, info: dict) -> bool:
    """Does the record carry the seal this user's key gives it? (No key and no seal is no seal.)"""
    return info.get("seal") is not None and seal_of(paths, info, create=False) == info["seal"]


def seal_of(paths: Paths, info: dict, create: bool = True) -> "str | None":
    """The seal of a module record (every key but "seal"), or None without a usable key."""
    key = _key(os.path.join(paths.cache_dir, KEY_FILE), create)
    if key is None:
        return None
    import hashlib

    body = repr(_canonical({k: v for k, v in info.items() if k != "seal"}))
    return hashlib.blake2b(body.encode("utf-8", "surrogatepass"), key=key, digest_size=32).hexdigest()


def _canonical(value: object) -> object:
    """The record with its dicts sorted: the same text whatever order a reader rebuilt them in."""
    if isinstance(value, dict):
        return sorted((str(k), _canonical(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    return value


def _key(path: str, create: bool) -> "bytes | None":
    """This user's key, a private file in the cache dir; a new one when absent or unusable (of two first
    switches at once, the loser's record reloads its modules by name, as an unsealed one does)."""
    key = read_private(path, KEY_BYTES, secret=True)
    if (key is None or len(key) != KEY_BYTES) and create:
        try:
            write_file(path, os.urandom(KEY_BYTES))
        except OSError:
            return None  # no seal: `off` then reloads the modules without restoring the account
        key = read_private(path, KEY_BYTES, secret=True)
    return key if key is not None and len(key) == KEY_BYTES else None
