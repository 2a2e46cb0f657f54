"""Tables a person reads in an 80-column terminal: `list` and `audit` on a host whose roots are
60+ characters (a deep site-software tree, a conda env with a long name, as on shared clusters),
shown in a real tmux pane. Every line fits, every version, status and size is whole, `--wide`
shows everything, a root holding a newline cannot break a line, colour only on a terminal."""

import json
import os
import shlex
import subprocess

import pytest

from tests import kits
from tests.conftest import CUDASWITCH, HOME, Host

WIDTH = 80
LONG_CONDA = HOME + "/miniconda3/envs/pytorch-nightly-cuda13-experimental-build-environment"
ODD_ROOT = "/opt/cuda-12.4-odd\nname"  # a directory name holding a newline (a stray paste, a bad script)


@pytest.fixture(scope="module")
def long_host(tmp_path_factory):
    base = tmp_path_factory.mktemp("tables")
    host = Host(base / "root", base / "work")
    kits.install_classic(kits.cuda13("13.1"),
                         host.path("/opt/site-software/cluster-stack/x86_64-rocky9/compilers/nvidia/cuda-13.1"),
                         "13.1")
    kits.install_classic(kits.cuda13("13.0"), host.path("/usr/local/cuda-13.0"), "13.0", version_json=False)
    os.symlink("/usr/local/cuda-13.0", host.path("/usr/local/cuda"))
    kits.install_classic_runtime12(host.path(ODD_ROOT))
    kits.conda_env(host.path(LONG_CONDA), "cuda-nvcc-13")
    config = base / "work" / "config"
    config.mkdir(parents=True)
    (config / "config.toml").write_text('toolkits = [%s]\ndefault = "13.0"\n' % json.dumps(
        "/opt/site-software/cluster-stack/x86_64-rocky9/compilers/nvidia/cuda-13.1"))
    assert all(len(item["root"]) >= 60 for item in json.loads(host.run("list", "--json", check=True).stdout))
    return host


def in_tmux(host, tmp_path, command, extra_env=None):
    """What an 80x200 tmux pane shows after `command`, one logical line per line (-J joins lines
    the terminal wrapped, so a line too long for the pane shows up as longer than 80)."""
    kits.require("tmux")
    socket = tmp_path / "tmux.sock"
    env = {**host.env, "COLUMNS": str(WIDTH), "TERM": "xterm-256color"}
    env.pop("NO_COLOR", None)
    env.update(extra_env or {})
    script = tmp_path / "run.sh"
    exports = "".join("export %s=%s\n" % (k, shlex.quote(v)) for k, v in env.items() if k.isidentifier())
    script.write_text(exports + "%s\ntmux -S %s wait-for -S done\nsleep 60\n" % (command, shlex.quote(str(socket))))
    tmux = ["tmux", "-S", str(socket)]
    subprocess.run(tmux + ["-f", "/dev/null", "new-session", "-d", "-x", str(WIDTH), "-y", "200",
                           "bash", "--norc", str(script)],
                   check=True, timeout=60, env={"PATH": os.environ["PATH"], "TERM": "xterm-256color"})
    try:
        subprocess.run(tmux + ["wait-for", "done"], check=True, timeout=300)
        plain = subprocess.run(tmux + ["capture-pane", "-p", "-J", "-S", "-", "-E", "-"], capture_output=True,
                               text=True, check=True, timeout=60).stdout
        coloured = subprocess.run(tmux + ["capture-pane", "-p", "-e", "-J", "-S", "-", "-E", "-"], capture_output=True,
                                  text=True, check=True, timeout=60).stdout
    finally:
        subprocess.run(tmux + ["kill-server"], timeout=60)
    return [line.rstrip() for line in plain.rstrip("\n").splitlines()], coloured


def test_list_fits_80_columns_with_every_version_and_status_whole(long_host, tmp_path):
    lines, coloured = in_tmux(long_host, tmp_path, "cudaswitch list")
    assert lines and max(len(line) for line in lines) <= WIDTH, "\n".join(lines)
    items = json.loads(long_host.run("list", "--json", check=True).stdout)
    text = "\n".join(lines)
    for item in items:  # the version and status of each toolkit whole on its row
        words = [line.replace("(", " ").replace(")", " ").split() for line in lines]  # "13.1.0 (nvcc 13.1.115)"
        assert any(item["version"] in row and item["status"] in row for row in words), (item, text)
    assert "\\n" in text and "odd\\nname" in text  # the newline is shown escaped, not taken as a line break
    assert "* active" not in text and "d default" in text  # only the legend for markers shown
    assert "\x1b[32m" in coloured  # a terminal: ok in green


def test_audit_fits_80_columns_with_versions_statuses_and_sizes_whole(long_host, tmp_path):
    lines, _ = in_tmux(long_host, tmp_path, "cudaswitch audit --no-progress")
    assert max(len(line) for line in lines) <= WIDTH, "\n".join(lines)
    report = json.loads(long_host.run("audit", "--json", check=True, timeout=300).stdout)
    from cudaswitch.audit.console import human_size

    for entry in report["toolkits"]:
        size = human_size(entry["size_bytes"])
        row = [line for line in lines if line.startswith(entry["version"] + " ") and size in line]
        assert row and entry["status"] in row[0].split(), (entry["version"], size, "\n".join(lines))
    header = next(line for line in lines if line.startswith("VERSION"))
    for column in ("VERSION", "STATUS", "SIZE", "DRIVER", "COMPILES"):
        assert column in header.split()  # headers whole too, never "STA…"


def test_wide_shows_every_root_whole(long_host, tmp_path):
    lines, _ = in_tmux(long_host, tmp_path, "cudaswitch list --wide; cudaswitch audit --wide --no-progress")
    text = "\n".join(lines)
    for item in json.loads(long_host.run("list", "--json", check=True).stdout):
        assert item["root"].replace("\n", "\\n") in text


def test_no_color_and_pipes_get_no_colour(long_host, tmp_path):
    _, coloured = in_tmux(long_host, tmp_path, "cudaswitch list; cudaswitch audit --no-progress", {"NO_COLOR": "1"})
    assert "\x1b[3" not in coloured and "\x1b[1;3" not in coloured
    piped = long_host.run("list")
    assert "\x1b" not in piped.stdout and "odd\\nname" in piped.stdout


def test_piped_output_keeps_whole_lines(long_host):
    """Not a terminal and no COLUMNS: a script or a ticket gets every root whole."""
    env = {k: v for k, v in long_host.env.items() if k != "COLUMNS"}
    proc = subprocess.run([CUDASWITCH, "list"], capture_output=True, text=True, env=env, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert str(long_host.path(LONG_CONDA)) in proc.stdout


@pytest.mark.parametrize("hosts", [3, 20], ids=["matrix", "summary"])
def test_audit_merge_fits_80_columns(long_host, hosts):
    """Node names as clusters spell them: the matrix when it fits, else one line per version."""
    report = json.loads(long_host.run("audit", "--json", check=True, timeout=300).stdout)
    def node(n):  # every third node lacks the newest toolkit: "MISSING ON" names them
        toolkits = report["toolkits"][1:] if n % 3 == 2 else report["toolkits"]
        return json.dumps({**report, "host": "gpu-node-%04d.cluster.example.org" % n, "toolkits": toolkits})
    lines = "\n".join(node(n) for n in range(hosts))
    proc = subprocess.run([CUDASWITCH, "audit", "merge"], input=lines, capture_output=True, text=True, timeout=300,
                          env={**long_host.env, "COLUMNS": str(WIDTH)})
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert max(len(line) for line in out) <= WIDTH, proc.stdout
    for entry in report["toolkits"]:
        assert any(line.startswith(entry["version"] + " ") for line in out), (entry["version"], proc.stdout)
    assert "%d hosts merged" % hosts in proc.stdout
    wide = subprocess.run([CUDASWITCH, "audit", "merge", "--wide"], input=lines, capture_output=True, text=True,
                          timeout=300, env={**long_host.env, "COLUMNS": str(WIDTH)})
    assert "gpu-node-0002.cluster.example.org" in wide.stdout


def test_a_terminal_without_a_size_shortens_nothing(long_host):
    """`script` gives a pty whose size was never set (0x0), as some CI runners do: no width is
    known, so nothing is cut to fit one."""
    script = kits.require("script")
    env = {k: v for k, v in long_host.env.items() if k != "COLUMNS"}
    proc = subprocess.run([script, "-qc", "%s list" % shlex.quote(CUDASWITCH), "/dev/null"], capture_output=True,
                          text=True, env=env, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert str(long_host.path(LONG_CONDA)) in proc.stdout and "…" not in proc.stdout
