"""Run real bash, zsh and fish: one-shot scripts, and interactive shells on a pty for the hook."""

import fcntl
import os
import pty
import select
import shutil
import subprocess
import termios
import time

from tests import kits

SHELLS = ("bash", "zsh", "fish")
EVAL_USE = {
    "bash": 'eval "$(cudaswitch {cmd} --shell bash)"',
    "zsh": 'eval "$(cudaswitch {cmd} --shell zsh)"',
    "fish": "cudaswitch {cmd} --shell fish | source",
}
# Loads the hook (and the `cudaswitch` shell function) as a user's rc file does.
INIT = {"bash": 'eval "$(cudaswitch init bash)"', "zsh": 'eval "$(cudaswitch init zsh)"',
        "fish": "cudaswitch init fish | source"}
# Prints the exported values of the CUDA variables as JSON (None = unset), as a child sees them.
DUMP = ("python3 -c 'import os, json, sys; names = sys.argv[1:]; "
        "print(json.dumps({n: os.environ.get(n) for n in names}))' "
        "PATH LD_LIBRARY_PATH CUDA_HOME CUDA_PATH CUDACXX CUDAToolkit_ROOT CUDASWITCH_STATE")


def shell_path(name):
    path = shutil.which(name)
    if path is None:
        kits.require(name)
    return path


def script(shell, lines, env, timeout=120, cwd=None):
    """Run `lines` as one script in a non-interactive `shell`; returns the CompletedProcess."""
    argv = {"bash": ["bash", "--norc", "--noprofile", "-c"], "zsh": ["zsh", "-f", "-c"],
            "fish": ["fish", "--no-config", "-c"]}[shell]
    argv[0] = shell_path(shell)
    return subprocess.run(argv + ["\n".join(lines)], capture_output=True, text=True, env=env,
                          timeout=timeout, cwd=cwd, stdin=subprocess.DEVNULL)


def _take_terminal():
    """Make the pty the controlling terminal (fish refuses to be interactive without one)."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class Interactive:
    """An interactive shell on a pseudo-terminal, driven like a person at a prompt."""

    ARGV = {"bash": ["--norc", "--noprofile", "-i"], "zsh": ["-f", "-i"], "fish": ["--no-config", "-i"]}

    def __init__(self, shell, env, cwd):
        self.shell = shell
        master, slave = pty.openpty()
        self.master = master
        env = {**env, "TERM": "dumb", "PS1": "$ ", "PROMPT": "$ "}
        self.proc = subprocess.Popen([shell_path(shell)] + self.ARGV[shell], stdin=slave, stdout=slave,
                                     stderr=slave, env=env, cwd=cwd, start_new_session=True,
                                     preexec_fn=_take_terminal)
        os.close(slave)
        self.buffer = b""
        self.counter = 0

    def run(self, line, timeout=60):
        """Send one command line; return what the shell printed up to the end marker."""
        self.counter += 1
        tag = "CSW%dEND" % self.counter
        # The marker is printed split so the echoed command line never contains it whole.
        self.send("%s\necho '%s''%s'\n" % (line, tag[:3], tag[3:]))
        return self.read_until(tag.encode(), timeout)

    def send(self, text):
        os.write(self.master, text.encode())

    def read_until(self, marker, timeout):
        deadline = time.monotonic() + timeout
        while marker not in self.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self.proc.poll() is not None:
                raise AssertionError("%s: no %r within %ss; got:\n%s" % (
                    self.shell, marker, timeout, self.buffer.decode(errors="replace")[-3000:]))
            ready, _, _ = select.select([self.master], [], [], min(remaining, 0.5))
            if ready:
                try:
                    self.buffer += os.read(self.master, 65536)
                except OSError:
                    pass
        out, _, self.buffer = self.buffer.partition(marker)
        return out.decode(errors="replace").replace("\r", "")

    def close(self):
        try:
            self.send("exit\n")
            self.proc.wait(timeout=10)
        except Exception:
            self.proc.kill()
        os.close(self.master)
