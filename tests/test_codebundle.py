"""init's launcher serves cudaswitch's modules from one compiled file beside itself (codebundle.py).

The layout is what pip leaves: the package copied into a plain site-packages-like directory (no
editable finder), the script with its `#!python` line stripped of -E, init run once so that it
writes the launcher. What a user would check: the command says the same with and without the
file, an edit to the package shows at the next command, the file follows it, and a file that
is not the user's own, or damaged, or naming code outside the package, is never run. Whether a
module came from the file is seen from the outside: Python writes a module's .pyc only when it
imports it from source, so a run after removing every __pycache__ rewrites only those of the
modules imported before the bundle is open."""

import marshal
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_hostile_interpreter import installed_script

REPO = Path(__file__).resolve().parent.parent
USE = ("use", "13.1", "--shell", "bash")
BEFORE_THE_BUNDLE = {"cudaswitch/__init__", "cudaswitch/safeio", "cudaswitch/codebundle"}


class PlainInstall:
    def __init__(self, host, base):
        self.site = base / "site"
        shutil.copytree(REPO / "cudaswitch", self.site / "cudaswitch", ignore=shutil.ignore_patterns("__pycache__"))
        script = installed_script(base / "bin", "pip")
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
        for cache in list(self.site.rglob("__pycache__")):
            shutil.rmtree(cache)


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


@pytest.mark.parametrize("damage", ["others may write it", "garbage", "cut short", "a link"])
def test_a_file_not_the_users_own_or_damaged_is_not_used_and_is_written_again(plain, damage):
    want = plain.run(*USE).stdout
    data = plain.bundle.read_bytes()
    if damage == "others may write it":
        plain.bundle.chmod(0o666)
    elif damage == "garbage":
        plain.bundle.write_bytes(os.urandom(len(data)))
    elif damage == "cut short":  # the index intact, the code after it gone
        plain.bundle.write_bytes(data[:len(data) // 8])
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


def test_an_entry_whose_source_lies_outside_the_package_never_runs(plain):
    """A bundle (the user's own file) naming a module's source outside the package dir: the entry
    is not served, whatever its code, and the real module is imported from the package."""
    plain.run(*USE)
    canary = plain.base / "canary"
    outside = plain.base / "bash.py"
    outside.write_text("open(%r, 'w').write('ran')\n" % str(canary))
    data = plain.bundle.read_bytes()
    size = int.from_bytes(data[16:20], "little")
    (header, index) = marshal.loads(data[20:20 + size])
    code = marshal.dumps(compile(outside.read_text(), str(outside), "exec"))
    st = outside.stat()
    index["cudaswitch.switch.shells.bash"] = (str(outside), (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns,
                                                             st.st_size), False, len(data) - 20 - size, len(code))
    head = marshal.dumps((header, index))
    plain.bundle.write_bytes(b"cudaswitch code\n" + len(head).to_bytes(4, "little") + head + data[20 + size:] + code)
    plain.bundle.chmod(0o600)
    out = _served_nothing(plain)
    assert "export CUDA_HOME=" in out.stdout and not canary.exists()


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
