"""Switching away from a loaded CUDA module through the module system itself, and back.

When `use` finds a CUDA module loaded (LOADEDMODULES names cuda/..., read without a process), it
asks the shell's module system (Lmod or Environment Modules) to swap that module for a marker
module, `cuda/cudaswitch`, a modulefile that sets nothing and lives in the cache dir (appended to
MODULEPATH while switched). So `module list` says what the shell has: not cuda/12.9 any more, but
CUDA from cudaswitch. The marker is also how `off` learns what the user did meanwhile: the module
system removes it on the user's `module unload cuda`, `module purge` or a load of another CUDA
module (Lmod's family swap), and then `off` reloads nothing; while the marker is loaded, `off`
swaps it back for the module that was there, so that module is loaded again as a module.

The module system keeps its own account in the environment (Lmod's _ModuleTable00N_ and
__LMOD_REF_COUNT_*, Environment Modules' __MODULES_*, LOADEDMODULES, _LMFILES_, MODULEPATH). A
swap there and back leaves that account different though the same modules are loaded (the marker's
dir stays in Lmod's recorded MODULEPATH). So the swap also records each of those variables it
changed, before and after; when `off` finds them as the swap left them (no module command since)
and the reload gives back the modules that were loaded, they get their recorded values, byte for
byte. After any module command of the user's in between, the module system's own answer stands.

Only this case starts a process (the module command, as a `module load` itself does); a shell
with no CUDA module loaded pays nothing.

`use module:12.9` does NOT load the module: it switches to the toolkit the module points at like
any other request (PATH, CUDA_HOME, the replace rules), because a site modulefile may do more than
point at a toolkit (load dependencies, extend MODULEPATH, set site variables) that cudaswitch could
neither see in its state nor undo exactly, and because it would make every such `use` as slow as a
module load. A user who wants the module itself loaded runs `module load cuda/12.9`.
"""

import os

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


def away(paths: "Paths", env: dict) -> "tuple[dict, dict | None]":
    """(environment with the CUDA modules swapped for the marker, module state for `off`), or
    (env, None) when no CUDA module is loaded."""
    loaded = foreign_modules(env)
    if not loaded:
        return env, None
    from cudaswitch.registry.sources import modules

    command = modules.module_command(env)
    if command is None:
        raise CudaSwitchError("%s is loaded, but no module command is reachable to unload it" % loaded[0],
                              "run `module unload %s` first" % loaded[0])
    directory = _marker_dir(paths, command[0])
    new = dict(env)
    new["MODULEPATH"] = _with_dir(env.get("MODULEPATH"), directory)
    steps = [["switch", loaded[0], MARKER]] if len(loaded) == 1 else [["unload", *loaded], ["load", MARKER]]
    for args in steps:
        new = _apply(new, _run(command, args, new))
    return new, {"kind": command[0], "unloaded": loaded, "dir": directory, "account": account_changes(env, new)}


def account_names(*envs: dict) -> "list[str]":
    """The module system's own variables present in any of `envs`."""
    names = {n for env in envs for n in env if n in ACCOUNT_NAMES or n.startswith(ACCOUNT_PREFIXES)}
    return sorted(names)


def account_changes(before: dict, after: dict) -> "dict[str, list]":
    """{name: [value before, value after]} for each module-system variable the swap changed
    (None: not set)."""
    return {n: [before.get(n), after.get(n)] for n in account_names(before, after) if before.get(n) != after.get(n)}


def valid(info: object) -> "dict | None":
    """The module record of a state as away() wrote it, else None (a foreign state reloads nothing).
    An account that is not one (a state of an older release, or edited) is dropped: `off` then
    leaves the module system's own variables as its reload sets them."""
    if not isinstance(info, dict):
        return None
    unloaded = info.get("unloaded")
    if not (isinstance(unloaded, list) and unloaded and all(isinstance(m, str) for m in unloaded)
            and isinstance(info.get("dir"), str)):
        return None
    if "account" in info and not _valid_account(info["account"]):
        return {k: v for k, v in info.items() if k != "account"}
    return info


def _valid_account(account):
    def value(v):
        return v is None or isinstance(v, str)

    return isinstance(account, dict) and all(
        isinstance(n, str) and (n in ACCOUNT_NAMES or n.startswith(ACCOUNT_PREFIXES)) and isinstance(pair, list)
        and len(pair) == 2 and value(pair[0]) and value(pair[1]) for n, pair in account.items())


def back(env: dict, info: object) -> dict:
    """The environment with the unloaded modules loaded again, if the user left the marker in place;
    the marker's MODULEPATH dir goes either way."""
    info = valid(info)
    if not info:
        return env
    new = dict(env)
    reloaded = MARKER in loaded_cuda_modules(env)
    if reloaded:
        from cudaswitch.registry.sources import modules

        command = modules.module_command(env)
        if command is None:
            raise CudaSwitchError("cannot reload %s: no module command is reachable" % info["unloaded"][0])
        first, rest = info["unloaded"][0], info["unloaded"][1:]
        hint = "`module unload %s`, then `cudaswitch off` restores the rest without it" % MARKER
        for args in [["switch", MARKER, first]] + ([["load", *rest]] if rest else []):
            new = _apply(new, _run(command, args, new, hint))
    entries = [d for d in (new.get("MODULEPATH") or "").split(":") if d != info["dir"]]
    if entries or new.get("MODULEPATH") is not None:
        new["MODULEPATH"] = ":".join(entries)
    if reloaded and info.get("account"):
        new = _account_restored(env, new, info["account"])
    return new


def _account_restored(at_off, new, account):
    """`new` with the module system's variables as they were before the swap, when nothing but the
    swap changed them (each as the swap left it at `off`) and the reload loaded the same modules
    again; else `new` as the module system made it."""
    untouched = all(at_off.get(n) == after for n, (_, after) in account.items())
    loaded = account.get("LOADEDMODULES", [at_off.get("LOADEDMODULES")])[0]
    if not untouched or (new.get("LOADEDMODULES") or "") != (loaded or ""):
        return new
    restored = dict(new)
    for name in account_names(at_off, new):
        value = account[name][0] if name in account else at_off.get(name)
        if value is None:
            restored.pop(name, None)
        else:
            restored[name] = value
    return restored


def _run(command, args, env, hint=None):
    from cudaswitch.registry.sources import modules

    try:
        return modules.run_module(command, args, env, TIMEOUT)
    except OSError as exc:
        raise CudaSwitchError("module %s failed: %s" % (" ".join(args), exc), hint) from None


def _apply(env, changes):
    new = dict(env)
    for name, value in changes.items():
        if value is None:
            new.pop(name, None)
        else:
            new[name] = value
    return new


def _with_dir(modulepath, directory):
    entries = [d for d in (modulepath or "").split(":") if d]
    return ":".join(entries + ([directory] if directory not in entries else []))


def _marker_dir(paths, kind):
    """The MODULEPATH dir holding the marker modulefile for this module system, written once."""
    from cudaswitch.paths import atomic_write

    directory = os.path.join(paths.cache_dir, "modulefiles-" + kind)
    path = os.path.join(directory, "cuda", MARKER_FILE[kind])
    text = MARKER_TEXT[kind].encode()
    try:
        with open(path, "rb") as handle:
            if handle.read(4096) == text:
                return directory
    except OSError:
        pass
    try:
        atomic_write(path, text)
    except OSError as exc:
        raise CudaSwitchError("cannot write the module marker %s: %s" % (path, exc.strerror)) from None
    return directory
