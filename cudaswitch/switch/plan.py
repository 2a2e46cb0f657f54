"""The switch plan: the one computation of the environment a switch to a toolkit gives: the previous
switch undone, a loaded CUDA module swapped out (modswitch), the host compiler chosen, the loader
path setting applied, every other toolkit replaced (envdiff). Every command that switches or judges
a switch calls it, so what verify judges is what `use` prints. Import-light: a warm switch starts no
process unless a CUDA module is loaded; a compiler's version is cached by the binary's identity.

The host compiler: nvcc refuses a gcc above the ceiling in the toolkit's crt/host_config.h
(`#error -- unsupported GNU version!`), so when the default gcc is above it and the host has a
supported g++-N (Debian's and Fedora's gcc-N/g++-N), nvcc and CMake (CUDAHOSTCXX) are pointed at
it: through NVCC_CCBIN where that nvcc reads it, else `-ccbin` in NVCC_PREPEND_FLAGS (nvcc 11.8
ignores NVCC_CCBIN). The C++ driver, not gcc-N: nvcc also links through it, and a C driver leaves
libstdc++ off the link line (`__cxa_guard_acquire` undefined). `-allow-unsupported-compiler` is
never added: it turns a clear refusal into failures deep in libstdc++ headers. The ceiling comes
from the toolkit's own header, never compat.toml: the host's answer wins over a table."""

import os

from cudaswitch import cache
from cudaswitch.errors import CudaSwitchError
from cudaswitch.paths import Paths
from cudaswitch.pathsearch import which
from cudaswitch.safeio import identity_text, read_or_none
from cudaswitch.switch import envdiff, standins
from cudaswitch.switch.toolkitdirs import Owner
from cudaswitch import envstate

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

VERSIONS_FILE = "compilers.marshal"
VERSION_TIMEOUT = 10.0
EXTRA_DIRS = ("/usr/bin",)  # distro packages install gcc-N here even when PATH lacks it
CCBIN_WORDS = ("-ccbin", "--compiler-bindir")
MAX_CACHED = 64
HEADER_MAX = 1 << 20  # crt/host_config.h is about 12 KiB


class SwitchPlan:
    """What a switch to `record` from `start` gives, computed once: `env` (the whole new environment),
    `diff` (what a shell applies), `state` (what CUDASWITCH_STATE records for `off`), `stand_ins` (the
    CUDA tools it lacks that another toolkit would have answered)."""

    __slots__ = ("record", "env", "state", "diff", "stand_ins")

    def __init__(self, record: dict, start: dict, switched: "tuple[dict, dict]", stand_ins: "list[str]") -> None:
        self.record, self.stand_ins = record, stand_ins
        self.env, self.state = switched
        self.diff = envdiff.diff(start, self.env)

    def public(self) -> dict:
        """{"set": {...}, "unset": [...]}: the change, in the shape `use --shell json` prints."""
        return {"set": dict(self.diff["set"]), "unset": list(self.diff["unset"])}


def plan(env: dict, record: dict, origin: str, known_roots: "list[str] | tuple[str, ...]" = (),
         source_file: "str | None" = None, paths: "Paths | None" = None,
         load_module: "str | None" = None) -> SwitchPlan:
    """The switch of `env` to `record`: `origin` (envstate.ORIGINS), `known_roots` (taken off the paths
    whole), `source_file` (the project file that asked), `load_module` (what `use module:X` loads)."""
    from cudaswitch.config import switch_settings  # `current` imports this module too, and reads no config

    entries = envdiff.path_entries(record)
    if any(os.pathsep in d for d in entries["PATH"] + entries["LD_LIBRARY_PATH"]):
        raise CudaSwitchError("%s cannot go on PATH: its path holds %r" % (record["root"], os.pathsep))
    paths = Paths(env) if paths is None else paths
    state = envstate.read_state(env)
    base = envstate.pristine(env, state)
    if state:
        base = none_foreign(env, base, state, lambda: list(known_roots))
    base, modules = _modules_swapped(paths, base, state, load_module)
    compilers = choose_compilers(paths.cache_dir, record, base)
    # config's `loader_path`: whether the toolkit's lib dirs go on LD_LIBRARY_PATH
    on_path = record if switch_settings(paths)["loader_path"] else dict(record, lib_dirs=[], env_lib=[])
    new = envdiff.switch_env(env, on_path, origin, source_file, known_roots, base=base, modules=modules,
                             compilers=compilers)
    tools = standins.foreign_tools(record, new[0], Owner(list(known_roots) + [record["root"]], base))
    if tools:  # in front of whatever else holds them: nothing of another toolkit answers for this one
        stand_in = standins.stand_in_dir(paths.cache_dir, tools)
        on_path = dict(on_path, env_bin=envdiff.path_entries(on_path)["PATH"] + [stand_in])
        new = envdiff.switch_env(env, on_path, origin, source_file, known_roots, base=base, modules=modules,
                                 compilers=compilers)
    return SwitchPlan(record, env, new, tools)


def none_foreign(env: dict, base: dict, state: dict, roots: "Callable[[], list[str]]") -> dict:
    """`base` less what it would bring back that another user may change: the state is data anyone
    who can set a variable chooses, and another user's dir would run their nvcc or `ls` as us. A
    toolkit the registry knows (`roots()`) passes whoever owns it (a site's tree owned by its admin)."""
    known: "list[str]" = []

    def foreign(path: str) -> bool:
        if not os.path.isabs(path) or not cache.others_may_change(path):
            return False
        if not known:
            try:
                known.extend(roots() or ["/nonexistent"])
            except CudaSwitchError:
                known.append("/nonexistent")
        return not any(path == root or path.startswith(root.rstrip("/") + "/") for root in known)

    for name in state["lists"]:
        had = set(envstate.split(env.get(name))) | ({""} if env.get(name) == "" else set())  # "" is [""] too
        back = envstate.split(base.get(name))
        # a relative or empty entry of PATH or LD_LIBRARY_PATH is whatever dir the shell is in (a cloned
        # repo's bin or libs): never one `use` took off there, as `use` always adds its own entries. An
        # include or flag list that `use` emptied comes back as it was, empty entries included.
        kept = [e for e in back if e in had or (os.path.isabs(e) and not foreign(e))
                or (not os.path.isabs(e) and name not in ("PATH", "LD_LIBRARY_PATH"))]
        if kept != back:
            cache.warn("left out of %s, which CUDASWITCH_STATE would restore: %s (other users may change it)"
                 % (name, ", ".join(ascii(e) for e in back if e not in kept)))
            envstate.assign(base, name, os.pathsep.join(kept) if kept or base.get(name) == "" else None)
    for name in state["scalars"]:
        value = base.get(name)
        # a flag variable's paths are words: -I/x, -ccbin /x, --compiler-bindir=/x
        named = ([w[w.index("/"):] for w in value.split() if w[:1] in "-/" and "/" in w]
                 if name in envstate.FLAG_VARS else [value]) if value and value != env.get(name) else []
        if any(foreign(path) for path in named):
            cache.warn("%s=%s, which CUDASWITCH_STATE would restore, left out (other users may change it)"
                       % (name, ascii(value)))
            envstate.assign(base, name, env.get(name))
    return base


def _modules_swapped(paths: Paths, base: dict, state: "dict | None",
                     load_module: "str | None" = None) -> "tuple[dict, dict | None]":
    """modswitch.swap, only where a CUDA module is loaded, to load, or swapped before: else no process."""
    modules = state.get("modules") if state else None
    if not modules and not load_module and "cuda" not in (base.get("LOADEDMODULES") or "").lower():
        return base, None
    from cudaswitch.switch import modswitch

    return modswitch.swap(paths, base, modules, load_module)


# --- the host compiler ---------------------------------------------------------------------------

def choose_compilers(cache_dir: str, record: dict, env: dict) -> dict:
    """{"NVCC_CCBIN" (or "NVCC_PREPEND_FLAGS": "-ccbin ..."): g++-N, "CUDAHOSTCXX": g++-N} when the default
    gcc is above the ceiling and a supported one exists; else {} (a compiler the user chose stands)."""
    if not record.get("nvcc"):
        return {}
    by_var = reads_ccbin_var(cache_dir, record["nvcc"]) if env.get("NVCC_CCBIN") else None
    # the user's own choice stands; an NVCC_CCBIN this nvcc does not read (11.8) picks nothing for it:
    # a profile.d script or an earlier switch to 12.x/13.x may have set it for another toolkit
    if (by_var is not False and env.get("NVCC_CCBIN")) or env.get("CUDAHOSTCXX") or ccbin_in_flags(env):
        return {}
    ceiling = gcc_ceiling(record)[0]
    gcc = which("gcc", env)
    if ceiling is None or not gcc:
        return {}
    have = major(compiler_version(cache_dir, gcc, env))
    if have is None or have <= ceiling:
        return {}
    if by_var is None:
        by_var = reads_ccbin_var(cache_dir, record["nvcc"])
    for number, gxx in supported_compilers(env, ceiling):
        if not by_var and any(c.isspace() for c in gxx):
            continue  # nvcc splits its flag variables on white space
        if major(compiler_version(cache_dir, gxx, env)) == number:  # the name could lie: ask it
            return {"NVCC_CCBIN" if by_var else "NVCC_PREPEND_FLAGS": gxx if by_var else "-ccbin " + gxx,
                    "CUDAHOSTCXX": gxx}
    return {}


def with_compilers(env: dict, chosen: dict) -> dict:
    """env with choose_compilers()'s answer applied: a -ccbin word in front of the user's NVCC_PREPEND_FLAGS."""
    out = dict(env, **chosen)
    if chosen.get("NVCC_PREPEND_FLAGS"):
        out["NVCC_PREPEND_FLAGS"] = envstate.in_front(chosen["NVCC_PREPEND_FLAGS"], env.get("NVCC_PREPEND_FLAGS"))
    return out


def host_config_files(record: dict) -> "list[str]":
    """crt/host_config.h candidates: classic include/, targets/<triple>/include/, wheel layouts."""
    root = record["root"]
    found = [os.path.join(root, "include", "crt", "host_config.h")]
    try:  # listdir, not glob: glob imports re, which this hot path must not
        targets = sorted(os.listdir(os.path.join(root, "targets")))
    except OSError:
        targets = []
    found += [os.path.join(root, "targets", t, "include", "crt", "host_config.h") for t in targets]
    for lib in record.get("lib_dirs") or []:
        found.append(os.path.join(os.path.dirname(lib), "include", "crt", "host_config.h"))
    return [p for p in dict.fromkeys(found) if os.path.isfile(p)]


def gcc_ceiling(record: dict) -> "tuple[int | None, str | None]":
    """(N of the first `#if __GNUC__ > N` in the toolkit's host_config.h, that header) or (None, None)."""
    for path in host_config_files(record):
        text = (read_or_none(path, HEADER_MAX) or b"").decode("utf-8", "replace")  # non-blocking, bounded
        for line in (line.strip() for line in text.splitlines()):
            if line.startswith("#if") and "__GNUC__ >" in line:
                digits = line.split("__GNUC__ >", 1)[1].strip().split(" ")[0].strip("()")
                if digits.isdigit():
                    return int(digits), path
    return None, None


def compiler_version(cache_dir: str, compiler: str, env: dict) -> "str | None":
    """'12.2.0' for a compiler binary (cached by identity), or None when it does not say."""
    return _cached(cache_dir, "", compiler, lambda: _ask_version(compiler, env))


def _cached(cache_dir: str, kind: str, path: str, ask: "Callable[[], object]") -> "Any":
    """ask()'s answer about the file at `path`, kept in the compilers' cache by its identity."""
    try:
        key = kind + identity_text(path)
    except OSError:
        return None
    return cache.remembered(cache_dir, VERSIONS_FILE, key, ask, MAX_CACHED)[0]


def _ask_version(compiler: str, env: dict) -> "str | None":
    """`gcc -dumpfullversion -dumpversion` (gcc 7+ answers the first, older ones the second)."""
    from cudaswitch.run import run

    result = run([compiler, "-dumpfullversion", "-dumpversion"], env=env, timeout=VERSION_TIMEOUT)
    text = result.stdout.decode("utf-8", "replace").strip() if result.ok else ""
    parts = text.split(".")
    return text if text and all(p.isascii() and p.isdigit() for p in parts) else None


def major(version: "str | None") -> "int | None":
    head = (version or "").split(".")[0]
    return int(head) if head.isascii() and head.isdigit() else None


def supported_compilers(env: dict, ceiling: int) -> "list[tuple[int, str]]":
    """[(N, g++-N)] on PATH and in /usr/bin with N <= ceiling, newest first."""
    found: "dict[int, tuple[int, str]]" = {}
    dirs = [d for d in (env.get("PATH") or "").split(os.pathsep) if os.path.isabs(d)] + list(EXTRA_DIRS)
    for directory in dict.fromkeys(dirs):
        try:
            names = os.listdir(directory)
        except OSError:
            continue
        for name in names:
            number = name[4:] if name.startswith("g++-") else ""
            if number.isascii() and number.isdigit() and int(number) <= ceiling and int(number) not in found:
                gxx = os.path.join(directory, name)
                if os.access(gxx, os.X_OK):
                    found[int(number)] = (int(number), gxx)
    return [found[n] for n in sorted(found, reverse=True)]


def reads_ccbin_var(cache_dir: str, nvcc: str) -> "bool | None":
    """Does this nvcc binary read NVCC_CCBIN? Its name is in every nvcc that does. None when that
    cannot be told (a wrapper script, an unreadable file): callers then set the -ccbin flag, which
    11.8 and 13.x both read."""
    return _cached(cache_dir, "ccbin-var|", nvcc, lambda: _names(nvcc, b"NVCC_CCBIN\0"))


def _names(path: str, word: bytes) -> "bool | None":
    import mmap

    try:
        with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return data.find(word) >= 0 if data[:4] == b"\x7fELF" else None  # a script says nothing
    except (OSError, ValueError):  # ValueError: an empty file cannot be mapped
        return None


def ccbin_in_flags(env: dict) -> "str | None":
    """The compiler the last -ccbin word in NVCC_PREPEND_FLAGS or NVCC_APPEND_FLAGS names, or None
    (nvcc reads them around its command line; the last -ccbin wins: seen with 11.8 and 13.0)."""
    found = None
    for name in ("NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS"):
        words = (env.get(name) or "").split()
        for i, word in enumerate(words):
            head, _, joined = word.partition("=")
            if head in CCBIN_WORDS:
                found = joined or (words[i + 1] if i + 1 < len(words) else "") or found
    return found
