"""The host compiler is part of a switch: nvcc refuses a gcc above the ceiling in the toolkit's
crt/host_config.h (`#error -- unsupported GNU version!`), so when the default gcc is above it and
the host has a supported g++-N (Debian's and Fedora's gcc-N/g++-N packages), the switch points
nvcc and CMake (CUDAHOSTCXX) at it. nvcc through NVCC_CCBIN where that nvcc reads it, else through
`-ccbin` in NVCC_PREPEND_FLAGS: nvcc 11.8 reads NVCC_PREPEND_FLAGS but ignores NVCC_CCBIN (its
binary names only the first; 13.x names both), so NVCC_CCBIN alone leaves an 11.x nvcc on gcc 12.
The C++ driver, not gcc-N: nvcc also links through it, and a C driver leaves libstdc++ off the
link line (`__cxa_guard_acquire` undefined). `-allow-unsupported-compiler` is never added: it turns
a clear refusal into failures deep in libstdc++ headers.

Import-light (os, marshal): it runs inside `use` and the hook. A compiler's version is asked once
(`gcc -dumpfullversion`) and cached by the binary's path, mtime and size.
"""

import os

from cudaswitch.pathsearch import which
from cudaswitch.verify import cache

VERSIONS_FILE = "compilers.marshal"
VERSION_TIMEOUT = 10.0
EXTRA_DIRS = ("/usr/bin",)  # distro packages install gcc-N here even when PATH lacks it


def host_config_files(record):
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


def ceiling_from_header(text):
    """N from the first `#if __GNUC__ > N` line, or None."""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#if") and "__GNUC__ >" in stripped:
            digits = stripped.split("__GNUC__ >", 1)[1].strip().split(" ")[0].strip("()")
            if digits.isdigit():
                return int(digits)
    return None


def gcc_ceiling(record):
    """(newest gcc major the toolkit accepts, the host_config.h saying so) or (None, None)."""
    for path in host_config_files(record):
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                ceiling = ceiling_from_header(handle.read())
        except OSError:
            continue
        if ceiling is not None:
            return ceiling, path
    return None, None


def _key(path):
    real = os.path.realpath(path)
    st = os.stat(real)
    return "%s|%d|%d" % (real, st.st_mtime_ns, st.st_size)


def compiler_version(cache_dir, compiler, env):
    """'12.2.0' for a compiler binary (cached by identity), or None when it does not say."""
    try:
        key = _key(compiler)
    except OSError:
        return None
    where = os.path.join(cache_dir, VERSIONS_FILE)
    known = cache.load_table(where)
    if key in known:
        return known[key]
    from cudaswitch.verify.nvcc import compiler_version as ask

    version = ask(compiler, env, VERSION_TIMEOUT)
    known[key] = version
    cache.store_table(where, known, 64)
    return version


def major(version):
    head = (version or "").split(".")[0]
    return int(head) if head.isdigit() else None


def supported_compilers(env, ceiling):
    """[(N, g++-N)] on PATH and in /usr/bin with N <= ceiling, newest first."""
    found = {}
    dirs = [d for d in (env.get("PATH") or "").split(os.pathsep) if os.path.isabs(d)] + list(EXTRA_DIRS)
    for directory in dict.fromkeys(dirs):
        try:
            names = os.listdir(directory)
        except OSError:
            continue
        for name in names:
            number = name[4:] if name.startswith("g++-") else ""
            if number.isdigit() and int(number) <= ceiling and int(number) not in found:
                gxx = os.path.join(directory, name)
                if os.access(gxx, os.X_OK):
                    found[int(number)] = (int(number), gxx)
    return [found[n] for n in sorted(found, reverse=True)]


def reads_ccbin_var(cache_dir, nvcc):
    """Does this nvcc binary read NVCC_CCBIN? Its name is in every nvcc that does (one scan of the
    binary, cached by identity). None when that cannot be told: a wrapper script that execs some
    nvcc, an unreadable file; callers then set the -ccbin flag, which 11.8 and 13.x both read, and
    never claim the variable is ignored."""
    try:
        key = "ccbin-var|" + _key(nvcc)
    except OSError:
        return None
    where = os.path.join(cache_dir, VERSIONS_FILE)
    known = cache.load_table(where)
    if key not in known:
        known[key] = _names(nvcc, b"NVCC_CCBIN\0")
        cache.store_table(where, known, 64)
    return known[key]


def _names(path, word):
    import mmap

    try:
        with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return data.find(word) >= 0 if data[:4] == b"\x7fELF" else None  # a script says nothing
    except (OSError, ValueError):  # ValueError: an empty file cannot be mapped
        return None


CCBIN_WORDS = ("-ccbin", "--compiler-bindir")


def ccbin_in_flags(env):
    """The compiler the last -ccbin/--compiler-bindir word in NVCC_PREPEND_FLAGS or
    NVCC_APPEND_FLAGS names (nvcc reads them before and after its command line, and the last
    value of a repeated -ccbin wins: seen with 11.8 and 13.0), or None."""
    found = None
    for name in ("NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS"):
        words = (env.get(name) or "").split()
        for i, word in enumerate(words):
            head, _, joined = word.partition("=")
            if head in CCBIN_WORDS:
                found = joined or (words[i + 1] if i + 1 < len(words) else "") or found
    return found


def host_compiler(env, reads_ccbin_var=True):
    """The host compiler nvcc would use: a -ccbin in its flag variables, else NVCC_CCBIN where this
    nvcc reads it (`reads_ccbin_var`; 11.x does not), else `gcc` on PATH. A -ccbin naming a
    directory means that directory's gcc."""
    chosen = ccbin_in_flags(env) or (env.get("NVCC_CCBIN") if reads_ccbin_var else None)
    if chosen:
        if os.path.isdir(chosen):
            return os.path.join(chosen, "gcc")
        return chosen if "/" in chosen else which(chosen, env)
    return which("gcc", env)


def user_choice(env, reads_var=True):
    """Has the user picked nvcc's host compiler themselves (their choice stands)? An NVCC_CCBIN
    this nvcc does not read (`reads_var` False: 11.8) picks nothing for it: a profile.d script or
    an earlier switch to 12.x/13.x may have set it for another toolkit."""
    return bool((reads_var and env.get("NVCC_CCBIN")) or env.get("CUDAHOSTCXX") or ccbin_in_flags(env))


def choose(cache_dir, record, env):
    """{"NVCC_CCBIN" (or "NVCC_PREPEND_FLAGS": "-ccbin ..."): g++-N, "CUDAHOSTCXX": g++-N} when the
    default gcc is above the toolkit's ceiling and a supported one exists; {} otherwise (also when
    the user chose a compiler: their choice stands, and the verdict judges it). A value for
    NVCC_PREPEND_FLAGS goes in front of the user's own flags (see envdiff)."""
    if not record.get("nvcc"):
        return {}
    by_var = reads_ccbin_var(cache_dir, record["nvcc"]) if env.get("NVCC_CCBIN") else None
    if user_choice(env, by_var is not False):
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


def with_compilers(env, chosen):
    """env with choose()'s answer applied: a -ccbin word in front of the user's NVCC_PREPEND_FLAGS."""
    from cudaswitch.switch.envdiff import in_front

    out = dict(env, **chosen)
    if chosen.get("NVCC_PREPEND_FLAGS"):
        out["NVCC_PREPEND_FLAGS"] = in_front(chosen["NVCC_PREPEND_FLAGS"], env.get("NVCC_PREPEND_FLAGS"))
    return out


def switched(env, record, origin, source_file=None, known_roots=(), base=None, modules=None):
    """envdiff.switched with the host compiler chosen for `record` (see choose), and without the
    toolkit's lib dirs when config says `loader_path = false` (see verify/fastconfig.py)."""
    from cudaswitch.switch import envdiff
    from cudaswitch.paths import Paths
    from cudaswitch.verify.fastconfig import switch_settings

    paths = Paths(env)
    compilers = choose(paths.cache_dir, record, envdiff.pristine(env) if base is None else base)
    if not switch_settings(paths)["loader_path"]:
        record = dict(record, lib_dirs=[], env_lib=[])
    return envdiff.switched(env, record, origin, source_file, known_roots, base=base, modules=modules,
                            compilers=compilers)


def chosen_by_switch(env):
    """The compilers the active switch set (its state remembers what they replaced), or {}."""
    from cudaswitch.switch import envdiff

    state = envdiff.read_state(env)
    if not state:
        return {}
    chosen = {name: env.get(name) for name in ("NVCC_CCBIN", "CUDAHOSTCXX")
              if name in state["scalars"] and env.get(name)}
    if "NVCC_PREPEND_FLAGS" in state["scalars"]:
        before, mine = state["scalars"]["NVCC_PREPEND_FLAGS"]
        # the user's own -ccbin there is theirs, not the switch's
        if envdiff.leads(envdiff.added_ccbin(before, mine), env.get("NVCC_PREPEND_FLAGS")):
            chosen["NVCC_PREPEND_FLAGS"] = env["NVCC_PREPEND_FLAGS"]
    return chosen
