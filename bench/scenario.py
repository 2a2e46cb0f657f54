"""The bench's own world, built in a temp dir: cudaswitch installed as a user has it, a small host of
real toolkits with an Lmod module and a project, a direnv project doing the same switch by hand, and
(largehost.py) the large synthetic host."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests import kits

REPO = Path(__file__).resolve().parent.parent
SETUP_TIMEOUT = 600
CLEAN_PREFIXES = ("CUDA", "CONDA", "VIRTUAL_ENV", "LMOD", "MODULE", "__LMOD", "_ModuleTable", "LOADEDMODULES",
                  "_LMFILES_", "LD_LIBRARY_PATH", "DIRENV", "PYTHON", "XDG_", "CUDASWITCH")
SMALL_VERSION = "13.1"  # what `use`, the project file, the Lmod module and the .envrc all select


def run(cmd, timeout=SETUP_TIMEOUT, **kw):
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, **kw)
    if proc.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(map(str, cmd)), proc.returncode,
                                                    proc.stderr[-2000:]))
    return proc


def install_cudaswitch(work, given=None):
    """(console script, how) — a non-editable `pip install .` into a fresh venv, as a user has it.

    An editable install adds its import-hook finder (~8 ms) to every start, which a user does not pay;
    `given` (--cudaswitch) measures some other installed script instead."""
    if given:
        return Path(given).resolve(), "given console script %s" % given
    venv = work / "venv"
    run([sys.executable, "-m", "venv", venv])
    run([venv / "bin" / "python", "-m", "pip", "install", "--quiet", "--disable-pip-version-check", REPO])
    how = "non-editable `pip install .` into a fresh venv (Python %s)" % sys.version.split()[0]
    return venv / "bin" / "cudaswitch", how


def anchors():
    """{'lmod': LMOD_CMD or None, 'direnv': path or None}, installing them with apt where possible."""
    found = {"lmod": kits.lmod_cmd(), "direnv": shutil.which("direnv")}
    if None in found.values() and shutil.which("apt-get") and os.geteuid() == 0:
        missing = [pkg for pkg, path in found.items() if path is None]
        subprocess.run(["apt-get", "install", "-y", *missing], capture_output=True, timeout=SETUP_TIMEOUT,
                       stdin=subprocess.DEVNULL, env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
        found = {"lmod": kits.lmod_cmd(), "direnv": shutil.which("direnv")}
    return {k: (str(v) if v else None) for k, v in found.items()}


def base_env(work, script):
    """A clean login-like environment: no CUDA, conda, module or direnv state from the caller."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(CLEAN_PREFIXES)}
    home = work / "home"
    home.mkdir(exist_ok=True)
    env.update({"HOME": str(home), "LC_ALL": "C", "PATH": os.pathsep.join(
        [str(script.parent), "/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"])})
    for var, sub in (("XDG_DATA_HOME", "data"), ("XDG_CONFIG_HOME", "config"), ("XDG_CACHE_HOME", "cache")):
        env[var] = str(work / "xdg" / sub)  # direnv keeps its allow list under XDG_DATA_HOME
    return env


def cudaswitch_env(env, root, work):
    return {**env, "CUDASWITCH_ROOT": str(root), "CUDASWITCH_CACHE_DIR": str(work / "cache"),
            "CUDASWITCH_CONFIG_DIR": str(work / "config"), "CUDASWITCH_DATA_DIR": str(work / "data")}


class SmallHost:
    """Real toolkits 13.0 and 13.1 under /usr/local (the NVIDIA runfile layout, from kits), an Lmod
    module cuda/13.1 for the same root, a project with `.cudaversion` = 13.1, and a direnv project
    whose `.envrc` makes the same switch. Both projects are entered from two levels down."""

    def __init__(self, work, script, lmod):
        self.work = work / "small"
        self.root = self.work / "root"
        self.script = script
        self.toolkit = self.root / "usr/local/cuda-13.1"
        kits.install_classic(kits.cuda13("13.0"), self.root / "usr/local/cuda-13.0", "13.0")
        kits.install_classic(kits.cuda13("13.1"), self.toolkit, "13.1")
        os.symlink("/usr/local/cuda-13.0", self.root / "usr/local/cuda")
        self.env = cudaswitch_env(base_env(work, script), self.root, self.work)
        self.modulepath = self.work / "modules"
        if lmod:
            kits.write_cuda_module(self.modulepath, SMALL_VERSION, self.toolkit)
            self.env.update(kits.lmod_env(self.modulepath))
        self.project = self._project("cs-project", ".cudaversion", "# this project builds with\n13.1\n")
        self.envrc_project = self._project("direnv-project", ".envrc", self._envrc())

    def _project(self, name, filename, text):
        top = self.work / "projects" / name
        (top / "src" / "pkg").mkdir(parents=True)
        (top / filename).write_text(text)
        return top

    def _envrc(self):
        """What people write by hand to pin a project to a toolkit with direnv."""
        return ('export CUDA_HOME=%s\nexport CUDA_PATH="$CUDA_HOME" CUDACXX="$CUDA_HOME/bin/nvcc"\n'
                'PATH_add "$CUDA_HOME/bin"\npath_add LD_LIBRARY_PATH "$CUDA_HOME/lib64"\n' % self.toolkit)

    @property
    def inside_project(self):
        return self.project / "src" / "pkg"

    @property
    def inside_envrc_project(self):
        return self.envrc_project / "src" / "pkg"

    def allow_envrc(self, direnv):
        run([direnv, "allow", self.envrc_project], env=self.env, cwd=self.envrc_project)

    def warm(self):
        """Build the registry cache (the one slow run a user has once) and check the switch is right."""
        out = run([self.script, "use", SMALL_VERSION, "--shell", "bash"], env=self.env, cwd=self.work).stdout
        if "export CUDA_HOME='%s'\n" % self.toolkit not in out:
            raise RuntimeError("`use %s` did not select %s:\n%s" % (SMALL_VERSION, self.toolkit, out))
