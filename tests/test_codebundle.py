"""init's launcher serves cudaswitch's modules from one compiled file beside itself (codebundle.py).

The layout is what pip leaves: the package copied into a plain site-packages-like directory (no
editable finder), the script with its `#!python` line stripped of -E, init run once so that it
writes the launcher. What a user would check: the command says the same with and without the
file, an edit to the package shows at the next command, the file follows it, and a file that
is not the user's own, or damaged, or naming code outside the package, is never run. Whether a
module came from the file is seen from the outside: Python writes a module's .pyc only when it
imports it from source, so a run after removing every .pyc rewrites only those of the modules
imported before the bundle is open."""

import marshal
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cudaswitch.safeio import file_identity
from tests.test_hostile_interpreter import installed_script

REPO = Path(__file__).resolve().parent.parent
USE = ("use", "13.1", "--shell", "bash")
BEFORE_THE_BUNDLE = {"cudaswitch/__init__", "cudaswitch/safeio", "cudaswitch/codebundle"}


class PlainInstall:
    def __init__(self, host, base, python=sys.executable):
        self.site = base / "site"
        shutil.copytree(REPO / "cudaswitch", self.site / "cudaswitch", ignore=shutil.ignore_patterns("__pycache__"))
        self.script = script = installed_script(base / "bin", "pip", python=python)
        self.env = dict(host.env, CUDASWITCH_CACHE_DIR=str(base / "cache"), CUDASWITCH_DATA_DIR=str(base / "data"))
        self.base = base
        init = subprocess.run([str(script), "init", "bash"], capture_output=True, text=True, timeout=120,
                              env=dict(self.env, PYTHONPATH=str(self.site)), cwd=base, check=True).stdout
        self.launcher = Path(re.search(r"^__cudaswitch_bin='([^']+)'$", init, re.M).group(1))
        assert "PACKAGE_DIR = %r" % str(self.site) in self.launcher.read_text()
        self.bundle = self.launcher.parent / ("code-%x.marshal" % sys.hexversion)

    def run(self, *args):
        proc = subprocess.run([str(self.launcher), *args], capture_output=True, text=True, env=self.env,
                              cwd=self.base, timeout=120)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
        return proc

    def compiled_by_python(self):
        """The package's modules Python wrote a .pyc for since clear_pycache()."""
        return {str(pyc.parent.parent.relative_to(self.site) / pyc.name.split(".")[0])
                for pyc in self.site.rglob("__pycache__/*.pyc")}

    def clear_pycache(self):
        """Every .pyc gone, the __pycache__ dirs kept: making or removing one changes its parent's
        listing, which a bundle entry checks (a new name there may shadow the module)."""
        for pyc in list(self.site.rglob("__pycache__/*.pyc")):
            pyc.unlink()


@pytest.fixture
def plain(standard_host, tmp_path):
    return PlainInstall(standard_host, tmp_path)


def test_fast_commands_come_from_the_file_and_say_the_same(plain, standard_host):
    # the file an interpreter upgraded in place (one micro version) left
    older = plain.launcher.parent / ("code-%x.marshal" % (sys.hexversion - 0x100))
    older.write_bytes(b"cudaswitch code\n")
    first = plain.run(*USE)
    assert not older.exists()
    assert "export CUDA_HOME='%s'\n" % standard_host.path("/usr/local/cuda-13.1") in first.stdout
    assert plain.bundle.is_file() and plain.bundle.stat().st_mode & 0o777 == 0o600
    plain.clear_pycache()
    again = plain.run(*USE)
    assert again.stdout == first.stdout and again.stderr == first.stderr
    assert plain.compiled_by_python() == BEFORE_THE_BUNDLE  # the other ~30 were served from the file
    # a command that needs modules `use` did not: found the normal way, then in the file too
    listed = plain.run("list").stdout
    assert str(standard_host.path("/usr/local/cuda-13.1")) in listed
    plain.clear_pycache()
    assert plain.run("list").stdout == listed and plain.compiled_by_python() == BEFORE_THE_BUNDLE


def test_an_edited_module_shows_at_once_and_the_file_follows(plain):
    plain.run(*USE)
    written = plain.bundle.stat().st_mtime_ns
    bash = plain.site / "cudaswitch" / "switch" / "shells" / "bash.py"
    with open(bash, "a") as handle:  # what an upgrade or a developer's edit does to one module
        handle.write("\nimport sys\nsys.stderr.write('edited bash.py\\n')\n")
    assert "edited bash.py" in plain.run(*USE).stderr
    assert plain.bundle.stat().st_mtime_ns != written
    plain.clear_pycache()
    assert "edited bash.py" in plain.run(*USE).stderr
    assert "cudaswitch/switch/shells/bash" not in plain.compiled_by_python()  # served, as edited


def _served_nothing(plain):
    plain.clear_pycache()
    out = plain.run(*USE)
    assert "cudaswitch/switch/shells/bash" in plain.compiled_by_python()  # imported from source
    return out


@pytest.mark.parametrize("damage", ["others may write it", "garbage", "cut short", "a link", "other bytecode"])
def test_a_file_not_the_users_own_or_damaged_is_not_used_and_is_written_again(plain, damage):
    want = plain.run(*USE).stdout
    data = plain.bundle.read_bytes()
    if damage == "others may write it":
        plain.bundle.chmod(0o666)
    elif damage == "garbage":
        plain.bundle.write_bytes(os.urandom(len(data)))
    elif damage == "cut short":  # the index intact, the code after it gone
        plain.bundle.write_bytes(data[:len(data) // 8])
    elif damage == "other bytecode":  # a -dev interpreter rebuilt in place: same path and version
        def other_magic(header, index):
            return (header[0], b"\0\0\r\n") + header[2:], index

        plain.bundle.write_bytes(_with_index(data, other_magic))
    else:
        target = plain.base / "elsewhere.marshal"
        target.write_bytes(data)
        plain.bundle.unlink()
        plain.bundle.symlink_to(target)
    if damage == "cut short":
        assert plain.run(*USE).stdout == want  # what the index names but the file lacks: from source
    else:
        assert _served_nothing(plain).stdout == want
    assert not plain.bundle.is_symlink() and plain.bundle.stat().st_mode & 0o777 == 0o600
    assert plain.bundle.read_bytes().startswith(b"cudaswitch code\n")
    plain.clear_pycache()
    assert plain.run(*USE).stdout == want and plain.compiled_by_python() == BEFORE_THE_BUNDLE


def _with_index(data, change):
    """The bundle `data` with its (header, index) replaced by change(header, index), code kept."""
    size = int.from_bytes(data[16:20], "little")
    header, index = change(*marshal.loads(data[20:20 + size]))
    head = marshal.dumps((header, index))
    return b"cudaswitch code\n" + len(head).to_bytes(4, "little") + head + data[20 + size:]


def test_an_entry_whose_source_lies_outside_the_package_never_runs(plain):
    """A bundle (the user's own file) naming a module's source outside the package dir: the entry
    is not served, whatever its code, and the real module is imported from the package."""
    plain.run(*USE)
    canary = plain.base / "canary"
    outside = plain.base / "bash.py"
    outside.write_text("open(%r, 'w').write('ran')\n" % str(canary))
    data = plain.bundle.read_bytes()
    code = marshal.dumps(compile(outside.read_text(), str(outside), "exec"))

    def point_outside(header, index):
        end = len(data) - 20 - int.from_bytes(data[16:20], "little")
        index["cudaswitch.switch.shells.bash"] = (str(outside), file_identity(outside), False, end, len(code),
                                                  ((str(plain.base), file_identity(plain.base)),))
        return header, index

    plain.bundle.write_bytes(_with_index(data, point_outside) + code)
    plain.bundle.chmod(0o600)
    out = _served_nothing(plain)
    assert "export CUDA_HOME=" in out.stdout and not canary.exists()


def test_a_package_made_beside_a_bundled_module_is_what_runs(plain):
    """What a normal import prefers wins at once: a new `bash/` package next to the bundled
    `bash.py` (an upgrade that turned a module into a package)."""
    plain.run(*USE)
    plain.run(*USE)
    shells = plain.site / "cudaswitch" / "switch" / "shells"
    (shells / "bash").mkdir()
    (shells / "bash" / "__init__.py").write_text((shells / "bash.py").read_text()
                                                 + "\nimport sys\nsys.stderr.write('package bash\\n')\n")
    assert plain.run(*USE).stderr.count("package bash") == 1
    assert plain.run(*USE).stderr.count("package bash") == 1  # and from the file written since


def test_a_warning_of_a_module_is_shown_once(plain):
    plain.run(*USE)
    with open(plain.site / "cudaswitch" / "switch" / "shells" / "bash.py", "a") as handle:
        handle.write("\n_ = (1 is 1)\n")  # SyntaxWarning at compile time
    assert plain.run(*USE).stderr.count("SyntaxWarning") == 1


def test_a_launcher_dir_others_may_write_gets_no_bundle_and_init_makes_it_private(plain):
    plain.run(*USE)
    directory = plain.launcher.parent
    assert directory.stat().st_mode & 0o777 == 0o700
    directory.chmod(0o775)  # what init made under umask 002 before
    _served_nothing(plain)
    plain.launcher.write_text(plain.launcher.read_text() + "\n")  # out of date: init writes it again
    subprocess.run([str(plain.script), "init", "bash"], capture_output=True, timeout=120, check=True,
                   env=dict(plain.env, PYTHONPATH=str(plain.site)), cwd=plain.base)
    assert directory.stat().st_mode & 0o777 == 0o755


def test_a_cudaswitch_older_than_its_launcher_still_runs(standard_host, tmp_path):
    """A downgrade: the launcher written by this version, the package without codebundle.py. In
    a venv of its own: this interpreter's site would find the editable checkout's codebundle."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True, timeout=120)
    plain = PlainInstall(standard_host, tmp_path, python=str(tmp_path / "venv" / "bin" / "python"))
    (plain.site / "cudaswitch" / "codebundle.py").unlink()
    out = plain.run(*USE)
    assert "export CUDA_HOME='%s'\n" % standard_host.path("/usr/local/cuda-13.1") in out.stdout


IN_PROCESS = r"""
import os, signal, sys, inspect
sys.path.append(sys.argv[1])
from cudaswitch import codebundle
bundle = codebundle.install(sys.argv[2], sys.argv[1])
import cudaswitch.switch.shells.bash as served, cudaswitch.data
from importlib import resources
print(served.__spec__.loader_state, inspect.getsource(served) == open(served.__file__).read(),
      sorted(p.name for p in resources.files("cudaswitch.data").iterdir() if p.name.endswith(".toml")))
compiled = codebundle._compiled
def interrupted(name, origin):  # Ctrl-C while the file is being written
    os.kill(os.getpid(), signal.SIGINT)
    return compiled(name, origin)
codebundle._compiled = interrupted
import cudaswitch.switch.shells.zsh
codebundle.refresh()
print("refreshed", flush=True)
os._exit(0)
"""


def test_a_served_module_has_its_source_and_resources_and_ctrl_c_waits_for_the_file(plain):
    plain.run(*USE)
    written = plain.bundle.stat().st_mtime_ns
    proc = subprocess.run([sys.executable, "-ES", "-c", IN_PROCESS, str(plain.site), str(plain.launcher)],
                          capture_output=True, text=True, timeout=120, cwd=plain.base)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert proc.stdout.splitlines() == ["cudaswitch bundle True ['compat.toml', 'sources.toml', 'torch_builds.toml']",
                                        "refreshed"]
    assert plain.bundle.stat().st_mtime_ns != written


FULL_DISK = r"""
import os, sys
sys.path.append(sys.argv[1])
from cudaswitch import codebundle
codebundle.install(sys.argv[2], sys.argv[1])
import cudaswitch.switch.shells.zsh  # new to the file: a rewrite is due
compiled = []
codebundle._compiled = lambda name, origin: compiled.append(name)
class Full:
    f_bavail, f_frsize = 3, 4096  # what statvfs says of a data filesystem with 12 KiB left
os.statvfs = lambda path: Full
codebundle.refresh()
print(len(compiled), flush=True)
os._exit(0)
"""


def test_a_filesystem_without_room_costs_no_compile(plain):
    """A nearly full data filesystem (the file would not fit): nothing is compiled to be thrown
    away, at this run or any later one, and the old file stays as it was."""
    plain.run(*USE)
    written = plain.bundle.read_bytes()
    proc = subprocess.run([sys.executable, "-ES", "-c", FULL_DISK, str(plain.site), str(plain.launcher)],
                          capture_output=True, text=True, timeout=120, cwd=plain.base)
    assert proc.returncode == 0 and proc.stderr == "" and proc.stdout == "0\n", (proc.stdout, proc.stderr)
    assert plain.bundle.read_bytes() == written


def test_a_directory_where_the_file_goes_is_left_alone(plain, standard_host):
    plain.bundle.mkdir(parents=True)
    for _ in range(2):
        assert "export CUDA_HOME=" in plain.run(*USE).stdout
    assert plain.bundle.is_dir() and sorted(p.name for p in plain.launcher.parent.iterdir()) == [
        "code-%x.marshal" % sys.hexversion, "cudaswitch"]


def test_an_editable_install_gets_no_bundle(standard_host, tmp_path):
    """The editable install's package is found through site's finder: its launcher names no package
    dir and loads no file (this test suite's own install is one)."""
    script = installed_script(tmp_path / "bin", "pip")
    env = dict(standard_host.env, CUDASWITCH_CACHE_DIR=str(tmp_path / "cache"),
               CUDASWITCH_DATA_DIR=str(tmp_path / "data"))
    init = subprocess.run([str(script), "init", "bash"], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=120, check=True).stdout
    launcher = Path(re.search(r"^__cudaswitch_bin='([^']+)'$", init, re.M).group(1))
    assert "PACKAGE_DIR = None" in launcher.read_text(), "the suite runs an editable install (README)"
    for _ in range(2):
        subprocess.run([str(launcher), *USE], capture_output=True, env=env, cwd=tmp_path, timeout=120, check=True)
    assert sorted(p.name for p in launcher.parent.iterdir()) == ["cudaswitch"]
