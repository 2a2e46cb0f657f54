"""On an 80-column terminal, `doctor`, `verify`, `torch` and `explain` print no line wider than 80
(the terminal used to break their words wherever the edge fell); into a pipe they print every item
whole on one line, as before, for grep and logs. Each command runs for real on a pseudo-terminal
whose window is set to 80 columns, as a person's terminal is."""

import fcntl
import os
import pty
import struct
import subprocess
import termios

import pytest

from tests.conftest import CUDASWITCH

COLUMNS = 80
NO_KERNEL = "RuntimeError: CUDA error: no kernel image is available for execution on the device"
COMMANDS = {
    "doctor": ["doctor"],
    "verify": ["verify", "13.0"],
    "torch": ["torch", "--driver", "550.54", "--gpu", "sm_61"],
    "explain": ["explain", NO_KERNEL],
}


def on_terminal(host, args, columns=COLUMNS):
    """stdout and stderr of the real command on a pty `columns` wide (no COLUMNS variable: the
    window size is what the command has to read)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    env = {k: v for k, v in host.env.items() if k != "COLUMNS"}
    env.update({"NO_COLOR": "1", "TERM": "xterm"})
    proc = subprocess.Popen([CUDASWITCH, *args], stdin=slave, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the command closed its end
            break
        if not chunk:
            break
        out += chunk
    proc.wait(timeout=300)
    os.close(master)
    return out.decode(errors="replace").replace("\r\n", "\n")


def piped(host, args):
    env = {k: v for k, v in host.env.items() if k != "COLUMNS"}
    return subprocess.run([CUDASWITCH, *args], capture_output=True, text=True, env=env, timeout=300,
                          stdin=subprocess.DEVNULL).stdout


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_no_line_wider_than_the_terminal(standard_host, name):
    args = COMMANDS[name]
    whole = piped(standard_host, args)
    assert max(len(line) for line in whole.splitlines()) > COLUMNS, "nothing to wrap:\n" + whole
    shown = on_terminal(standard_host, args)
    too_wide = [line for line in shown.splitlines() if len(line) > COLUMNS]
    assert too_wide == [], shown
    assert len(shown.splitlines()) > len(whole.splitlines())  # broken into lines, not cut


def check_items(lines):
    """Lines of doctor's check list: indented, from the first layer header on (the toolkit line
    above it hangs under its own label)."""
    first = next(i for i, line in enumerate(lines) if line.endswith(":") and not line.startswith(" "))
    return [line for line in lines[first:] if line.startswith("  ")]


def is_item_start(line):
    return line[2:6] in ("ok  ", "info", "WARN", "FAIL") or line.lstrip().startswith("-> ")


def test_a_wrapped_check_hangs_under_its_text(standard_host):
    """A check's continuation lines start under its message (8 columns in), not at the margin, so
    the list of checks stays readable."""
    shown = check_items(on_terminal(standard_host, COMMANDS["doctor"]).splitlines())
    continued = [line for line in shown if not is_item_start(line)]
    assert continued, "nothing was wrapped"
    for line in continued:
        assert line.startswith(" " * 8) and not line[8:9].isspace() or line.startswith(" " * 13), line


def test_a_pipe_gets_every_check_on_one_line(standard_host):
    """grep WARN of a piped doctor still finds each check with its whole message: no line of the
    list is a continuation."""
    whole = check_items(piped(standard_host, COMMANDS["doctor"]).splitlines())
    assert whole and all(is_item_start(line) for line in whole), whole
