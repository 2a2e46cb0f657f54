"""Modules on $MODULEPATH, asked through the module system itself, which evaluates modulefiles
(variables, pathJoin, conditionals): Lmod's `spider -o spider-json` (PATH dirs in `pathA`,
LD_LIBRARY_PATH in `lpathA`); Environment Modules 4.x/5.x: `avail -j` (before 4.5: `avail -t`), then
ONE `display` of every CUDA modulefile. Evaluating runs them: a scan that must run nothing it finds
reads them as text (modtext). A modulefile that fails to evaluate yields no root but stays watched,
so fixing it rescans.
"""

import json
import os
import re

from cudaswitch.pathsearch import which
from cudaswitch.registry.sources import Candidate, Scan

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    from cudaswitch.run import Result
    from cudaswitch.toolkit import Env

NAME = "module"
DESCRIPTION = "Lmod and Environment Modules modulefiles on $MODULEPATH"
PACKAGES = ("cuda", "cudatoolkit", "cuda-toolkit", "nvhpc-cuda")
LMOD_GUESSES = ("/usr/share/lmod/lmod/libexec", "/opt/apps/lmod/lmod/libexec")
MODULECMD_GUESSES = ("/usr/share/Modules/libexec/modulecmd.tcl",       # upstream install, RHEL/Fedora
                     "/usr/lib/x86_64-linux-gnu/modulecmd.tcl",        # Debian/Ubuntu 5.x
                     "/usr/lib/aarch64-linux-gnu/modulecmd.tcl",
                     "/usr/lib/modulecmd.tcl")
MIN_TIMEOUT = 10  # a module system's first run on a big MODULEPATH reads every dir


def find(scan: Scan) -> "Iterator[Candidate]":
    modulepath = scan.env.get("MODULEPATH", "")
    dirs = [d for d in modulepath.split(":") if d]
    executes = scan.config.get("probe_exec", True)
    tool = _module_system(scan.env) if executes else None
    if not dirs or (executes and tool is None):
        return
    for directory in dirs:
        for name in scan.listdir(directory):
            scan.watch(os.path.join(directory, name))
    if tool is None:  # not executes: evaluating a modulefile runs it, so its text is read (see modtext)
        from cudaswitch.registry.sources import modtext

        found = [(name, path, _root_of(dirs)) for name, path, dirs in modtext.read(dirs, PACKAGES, scan.listdir)]
    elif tool[0] == "lmod":
        found = _spider(tool[1], modulepath, scan.timeout)
    else:
        found = _modulecmd_cuda(tool[1], scan.env, scan.timeout)
    # Name order: Lmod's spider JSON comes from a Lua table, whose order changes from run to run,
    # and the first module naming a toolkit is the origin `list` shows for it.
    for module, modulefile, root in sorted(found, key=lambda item: (item[0], item[1])):
        scan.watch(modulefile)  # also when it gave no root (a Tcl error): fixing it rescans
        scan.watch(os.path.dirname(modulefile))  # a new version beside it (cuda/13.2) changes this dir
        if root:
            yield Candidate(scan.env_path(root), NAME, module, hint_version=module.rpartition("/")[2])


def _module_system(env: "Env") -> "tuple[str, Any] | None":
    """("lmod", spider) or ("modules", modulecmd.tcl argv prefix) or None: the system the environment
    names ($LMOD_DIR/$LMOD_CMD, $MODULES_CMD, $MODULESHOME), else an installed Lmod, else Modules."""
    lmod_declared = []
    if env.get("LMOD_DIR"):
        lmod_declared.append(os.path.join(env["LMOD_DIR"], "spider"))
    if env.get("LMOD_CMD"):
        lmod_declared.append(os.path.join(os.path.dirname(env["LMOD_CMD"]), "spider"))
    spider = _first_executable(lmod_declared)
    if spider:
        return "lmod", spider
    # Modules' init sets MODULES_CMD; an upstream install also keeps it at $MODULESHOME/libexec
    # (Lmod sets MODULESHOME too, to a dir without one).
    declared = [env.get("MODULES_CMD")]
    if env.get("MODULESHOME"):
        declared.append(os.path.join(env["MODULESHOME"], "libexec", "modulecmd.tcl"))
    modulecmd = next(filter(None, (_modulecmd_argv(p, env) for p in declared if p)), None)
    if modulecmd:
        return "modules", modulecmd
    spider = _first_executable([os.path.join(d, "spider") for d in LMOD_GUESSES])
    if spider:
        return "lmod", spider
    modulecmd = next(filter(None, (_modulecmd_argv(p, env) for p in MODULECMD_GUESSES)), None)
    return ("modules", modulecmd) if modulecmd else None


def _first_executable(paths: "list[str]") -> "str | None":
    return next((p for p in paths if os.path.isfile(p) and os.access(p, os.X_OK)), None)


def _modulecmd_argv(path: str, env: "Env") -> "list[str] | None":
    """modulecmd.tcl runs through its own #! (the tclsh it was built for); if it is not executable,
    through tclsh on PATH, as Modules' init scripts run it."""
    if not os.path.isfile(path):
        return None
    if os.access(path, os.X_OK):
        return [path]
    tclsh = which("tclsh", env)  # absolute PATH entries only, as every lookup of ours
    return [tclsh, path] if tclsh else None


# ---------------------------------------------------------------- Lmod


def _spider(spider: str, modulepath: str, timeout: float) -> "list[tuple[str, str, str | None]]":
    """(module name, modulefile, toolkit root) for each CUDA modulefile Lmod reports."""
    proc = _run([spider, "-o", "spider-json", modulepath], None, timeout)
    try:
        data = json.loads(proc.stdout or b"{}") if proc else {}
    except ValueError:
        return []
    found: "list[tuple[str, str, str | None]]" = []
    for package, entries in data.items() if isinstance(data, dict) else ():
        if package.lower() not in PACKAGES or not isinstance(entries, dict):
            continue
        for modulefile, info in entries.items():
            root = _root_of(info) if isinstance(info, dict) else None
            if root:
                found.append((info.get("fullName", package), modulefile, root))
    return found


def _root_of(info: dict) -> "str | None":
    """The toolkit root a modulefile points at: parent of the bin dir it prepends to PATH, else of its lib dir."""
    for key, names in (("pathA", ("bin",)), ("lpathA", ("lib64", "lib"))):
        for directory in info.get(key) or {}:
            if os.path.basename(directory.rstrip("/")) in names:
                return os.path.dirname(directory.rstrip("/"))
    return None


def _run(argv: "list[str]", env: "Env | None", timeout: float) -> "Result | None":
    """The finished run (stdout, stderr, returncode), or None when it could not run or hung."""
    from cudaswitch.run import run

    result = run(argv, env=env, timeout=max(timeout, MIN_TIMEOUT))
    return None if result.returncode is None else result


# ---------------------------------------------------------------- Environment Modules


def _modulecmd_cuda(modulecmd: "list[str]", env: "Env", timeout: float) -> "list[tuple[str, str, str | None]]":
    """(module name, modulefile, toolkit root or None) for each CUDA modulefile Modules lists.
    Modules writes its reports (avail, display) on stderr; stdout is shell code for `python`."""
    env = {**env, "MODULES_AVAIL_INDEPTH": "1",  # a site's indepth=0 would list only `cuda/`
           "MODULES_PAGER": "", "MODULES_COLOR": "never"}
    names = _avail(modulecmd, env, timeout)
    cuda = {path: name for path, name in names.items() if _package(name) in PACKAGES}
    if not cuda:
        return []
    # Full paths, not names: one name in two MODULEPATH dirs is two modulefiles, and display's
    # header for each is exactly the path asked for.
    proc = _run([*modulecmd, "python", "display", *cuda], env, timeout)
    reports = _display_blocks(proc.stderr.decode(errors="replace")) if proc else {}
    return [(name, path, _root_of(reports.get(path, {}))) for path, name in cuda.items()]


def _package(name: str) -> str:
    """What Lmod would call the package: the module name without its version (cuda/13.1 -> cuda)."""
    return (name.rpartition("/")[0] or name).lower()


def _avail(modulecmd: "list[str]", env: "Env", timeout: float) -> "dict[str, str]":
    """{modulefile path: module name}, real modulefiles only (no aliases; a virtual module maps to
    the file it names, which keeps the name of that file's own module when both are listed)."""
    proc = _run([*modulecmd, "python", "avail", "-j"], env, timeout)
    try:
        data = json.loads(proc.stderr) if proc else None
    except ValueError:
        data = None
    if not isinstance(data, dict):  # Modules < 4.5 has no -j
        proc = _run([*modulecmd, "python", "avail", "-t"], env, timeout)
        return _avail_terse(proc.stderr.decode(errors="replace")) if proc else {}
    entries = [e for d in data.values() if isinstance(d, dict) for e in d.values() if isinstance(e, dict)]
    files = [(e["pathname"], e["name"]) for e in entries if e.get("type") == "modulefile"
             and isinstance(e.get("pathname"), str) and isinstance(e.get("name"), str)]
    files.sort(key=lambda pn: not pn[0].endswith("/" + pn[1]))  # a file's own name first
    found: "dict[str, str]" = {}
    for path, name in files:
        found.setdefault(path, name)
    return found


def _avail_terse(report: str) -> "dict[str, str]":
    """`avail -t`: a `<modulepath dir>:` line, then one module per line, symbols in parentheses
    (`cuda/12.4(default)`, `cuda/latest(@)` for an alias, which has no file of its own)."""
    found: "dict[str, str]" = {}
    directory = None
    for line in report.splitlines():
        line = line.strip()
        if line.endswith(":") and line.startswith("/"):
            directory = line[:-1]
        elif directory and line and not line.endswith("/"):
            name = line.split("(", 1)[0]
            path = os.path.join(directory, name)
            if os.path.isfile(path):
                found.setdefault(path, name)
    return found


RULE = "-" * 20  # Modules frames each modulefile's report with a line of 67 dashes
# a braced word ends at the first } before white space or the end (unclosed: the rest of the line)
DISPLAY_WORD = re.compile(r"\{(.*?)(?:\}(?=\s|$)|$)|(\S+)")


def _display_blocks(report: str) -> "dict[str, dict[str, list[str]]]":
    """{modulefile: {"pathA": [...], "lpathA": [...]}} from `display` of several modulefiles: each is
    a rule, `<modulefile>:`, then one line per command (`prepend-path<TAB>PATH /a/bin`)."""
    blocks: "dict[str, dict[str, list[str]]]" = {}
    current, after_rule = None, False
    for line in report.splitlines():
        if line.startswith(RULE) and not line.strip("-"):
            current, after_rule = None, True
        elif after_rule and line.endswith(":"):
            current, after_rule = blocks.setdefault(line[:-1], {"pathA": [], "lpathA": []}), False
        elif current is not None:
            command, _, args = line.partition("\t")
            if command in ("prepend-path", "append-path"):
                var, values = _path_command(_display_words(args))
                key = {"PATH": "pathA", "LD_LIBRARY_PATH": "lpathA"}.get(var)
                if key:
                    current[key] += values
    return blocks


def _path_command(words: "list[str]") -> "tuple[str, list[str]]":
    """(variable, [dirs]) from prepend-path's arguments:
    [--delim C | -d C | --delim=C | --duplicates] VAR VALUE..."""
    delim = ":"
    while words and words[0].startswith("-"):
        option = words.pop(0)
        if option in ("-d", "--delim") and words:
            delim = words.pop(0)
        elif option.startswith("--delim="):
            delim = option[len("--delim="):]
    if not words or not delim:
        return "", []
    return words[0], [part for value in words[1:] for part in value.split(delim) if part]


def _display_words(args: str) -> "list[str]":
    """Split display's arguments as Modules 5 writes them: joined by spaces, an argument holding
    whitespace wrapped in braces verbatim (`{/opt/my cuda/bin}`), no escaping otherwise."""
    return [braced or word for braced, word in DISPLAY_WORD.findall(args)]


# ---------------------------------------------------------------- loading and unloading


def module_command(env: "Env") -> "tuple[str, list[str]] | None":
    """("lmod" | "modules", argv prefix) of the module system this shell's `module` runs, or None.
    The shell's own first: $LMOD_CMD, then $MODULES_CMD / $MODULESHOME's modulecmd.tcl."""
    if env.get("LMOD_CMD") and _first_executable([env["LMOD_CMD"]]):
        return "lmod", [env["LMOD_CMD"]]
    tool = _module_system(env)
    if tool is None:
        return None
    kind, command = tool
    if kind == "lmod":
        lmod = os.path.join(os.path.dirname(command), "lmod")
        return ("lmod", [lmod]) if _first_executable([lmod]) else None
    return kind, command


def run_module(command: "tuple[str, list[str]]", args: "list[str]", env: "Env",
               timeout: float) -> "dict[str, str | None]":
    """The variables `module ARGS` changes, {name: value | None (unset)}, asked in the module
    system's `python` output (`os.environ['X'] = '...'`, `del os.environ['X']`), read as Python
    literals without running anything. Raises OSError with the module system's message on failure."""
    import ast
    import warnings

    kind, argv = command
    from cudaswitch.run import run  # own session, private cwd, absolute PATH only: no project file in reach

    proc = run([*argv, "python", *args], env=env, timeout=max(timeout, MIN_TIMEOUT))
    if proc.returncode is None:
        raise OSError("%s did not answer: %s" % (argv[-1], proc.error or "timed out"))
    text = proc.stdout.decode("utf-8", "surrogateescape")
    if proc.returncode != 0 or "_mlstatus = False" in text:
        message = proc.stderr.decode(errors="replace").strip().splitlines()
        raise OSError((message or ["exit status %d" % proc.returncode])[-1][:200])
    changes: "dict[str, str | None]" = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Modules writes a backslash unescaped ('\d'), as Python reads it
        for line in text.splitlines():
            line = line.strip().rstrip(";")
            if line.startswith("del os.environ["):
                changes[ast.literal_eval(line[len("del os.environ["):-1])] = None
            elif line.startswith("os.environ["):
                key, _, value = line[len("os.environ["):].partition("] = ")
                changes[ast.literal_eval(key)] = ast.literal_eval(value)
    return changes
