"""The program `init` names to the hook: one that starts Python with -E.

The hook starts cudaswitch inside whatever repository the shell is in. Python puts the working
directory on sys.path for an empty or relative PYTHONPATH entry (what `export
PYTHONPATH=$PYTHONPATH:/opt/x` leaves when it was unset), and `site` imports a
`sitecustomize.py` or `usercustomize.py` found there before the first line of the script runs,
so only the interpreter's own -E keeps that repository's code out. bin/cudaswitch asks for -E
on its `#!python` line, and setuptools keeps it there, but pip (and so pipx) rewrites that line
without its options. Where the script's own first line lacks -E, `init` therefore writes a
launcher whose first line starts this same interpreter with -E and which does what the script
does (imports cudaswitch's entry point and runs it), in cudaswitch's data dir (the user's own, like
the program), and names that launcher instead. It imports rather than executing the script's text:
a script has no .pyc, and compiling it at every start cost ~2 ms of a ~20 ms `use`. When the script
is gone (uninstalled) the launcher says so in one line, as the hook does for a missing program.

The launcher also passes -S: `site` costs ~3 ms of a ~13 ms start (every prompt that changes
project and every `cudaswitch` typed in a hooked shell pays it), and the fast commands need only
the directory cudaswitch itself was imported from, which the launcher puts on sys.path. The first
import that nothing finds (typer for a typer command, an editable install's finder, a package a
.pth file adds) runs `site` then, so every command still sees the sys.path a normal start gives.

With a plain package dir it serves cudaswitch's modules from one compiled file beside itself
(codebundle.py: ~1.5 ms of the ~30 imports of a fast command), and it starts with the cyclic
garbage collector off (~0.3 ms of collections while those modules load; a fast command's
process ends before any cycle matters, and a typer command turns it back on).
"""

import binascii
import os
import sys

from cudaswitch.safeio import read_or_none, replace_regular

SCRIPT_MAX_BYTES = 64 << 10
SHEBANG_MAX = 127  # what Linux before 5.1 reads of a #! line


MARK = b"# written by `cudaswitch init` for "
BODY = """import gc
import os
import sys

gc.disable()  # a fast command ends within milliseconds, its cycles with it; typer commands turn it on

PROGRAM = %s
PACKAGE_DIR = %s  # where init found cudaswitch on sys.path; None: site (an editable install's finder)


class SiteWhenNeeded:
    \"\"\"Started with -S: the first import nothing finds runs site, then asks again.\"\"\"

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        sys.meta_path.remove(cls)
        import site

        site.main()
        for finder in sys.meta_path:
            spec = finder.find_spec(name, path, target) if hasattr(finder, "find_spec") else None
            if spec is not None:
                return spec
        return None


if not os.path.isfile(PROGRAM):
    sys.stderr.write("cudaswitch: %%s not found; nothing done (it was run through %%s)\\n" %% (PROGRAM, __file__))
    sys.exit(127)
if sys.flags.no_site:
    if PACKAGE_DIR:
        sys.path.append(PACKAGE_DIR)
    sys.meta_path.append(SiteWhenNeeded)
try:
    if PACKAGE_DIR and sys.flags.no_site:  # the fast commands' modules from one file (codebundle.py)
        try:
            from cudaswitch.codebundle import install
        except ImportError as exc:  # a cudaswitch older than this launcher (a downgrade): no file
            if exc.name == "cudaswitch":
                raise
        else:
            install(__file__, PACKAGE_DIR)
    from cudaswitch.cli.main import run_program
except ModuleNotFoundError as exc:  # installed where only PYTHONPATH finds it: its absolute entries
    if exc.name != "cudaswitch":
        raise
    sys.path[1:1] = [entry for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if os.path.isabs(entry)]
    from cudaswitch.cli.main import run_program
sys.exit(run_program())
"""


def isolated_program(program, paths):
    """`program` where its own first line starts Python with -E (or it is a launcher already),
    else the -E launcher for it (written when missing or out of date); `program` too when no
    launcher can be written. Judged by the file, not by this process's flags: the script may be
    running with -E only because it started itself again so."""
    text = read_or_none(program, SCRIPT_MAX_BYTES) if program else None
    if not text or not text.startswith(b"#!") or len(text) > SCRIPT_MAX_BYTES:
        return program
    first = text.split(b"\n", 1)[0]
    start = _shebang(sys.executable)
    if _isolating(first) or MARK in text[:1024] or start is None:
        return program
    named = ascii(program).encode()
    wanted = start + MARK + named + b" (with -E; see launcher.py)\n" + BODY.encode() % (named, ascii(
        package_dir()).encode())
    key = binascii.crc32(("%s\0%s" % (sys.executable, program)).encode("utf-8", "surrogateescape"))
    path = os.path.join(paths.data_dir, "launchers", "%08x" % key, "cudaswitch")
    if read_or_none(path, len(wanted)) == wanted and os.access(path, os.X_OK):
        return path
    try:
        _private_directory(os.path.dirname(path))
        replace_regular(path, wanted, mode=0o755, own_file=True)
        os.chmod(path, 0o755)
    except (OSError, ValueError):
        return program
    return path


def _private_directory(directory):
    """The launcher's own directory, writable by this user only (under umask 002 it was not):
    whoever may write there could replace the launcher, or the module file beside it."""
    os.makedirs(directory, mode=0o700, exist_ok=True)
    st = os.stat(directory)
    if st.st_mode & 0o022 and st.st_uid == os.geteuid():
        os.chmod(directory, st.st_mode & 0o755)


def package_dir():
    """The sys.path entry this cudaswitch was imported from, or None where no plain entry holds it
    (an editable install maps the package through a finder that a .pth file installs)."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    entries = {os.path.abspath(entry) for entry in sys.path if entry}
    return here if here in entries and os.path.isfile(os.path.join(here, "cudaswitch", "__init__.py")) else None


def _isolating(first_line):
    """Whether a #! line passes Python -E (or -I, which implies it) in its options."""
    options = first_line[2:].split()[1:]
    return any(o.startswith(b"-") and not o.startswith(b"--") and (b"E" in o or b"I" in o) for o in options)


def _shebang(python):
    """The first line(s) that start `python -ES` on this script: a #! line when the kernel takes
    it whole, else /bin/sh exec'ing it (a line Python reads as a string, as pip's own scripts do
    for long paths). None for a path neither can carry."""
    raw = python.encode("utf-8", "surrogateescape")
    if not os.path.isabs(python) or any(c in raw for c in b"\n\r\0'"):
        return None
    if len(raw) + 6 <= SHEBANG_MAX and not any(c in raw for c in b" \t"):
        return b"#!" + raw + b" -ES\n"
    return b"#!/bin/sh\n'''exec' '" + raw + b"' -ES \"$0\" \"$@\"\n' '''\n"
