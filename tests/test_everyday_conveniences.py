"""Conveniences pyenv, mise and a shell give, checked through the real command: `use`/`off` typed
at a terminal without the hook say how to apply them; `local`/`global` without a value print the
one in effect; `config get/set/unset`; `exec` exits 127/126 as a shell does; a project file from a
Windows editor (BOM, CRLF) is read, by the hook too; `global --unset` with nothing set says so."""

import json
import stat

import pytest

from tests import shellrun
from tests.shellrun import INIT, Interactive


@pytest.mark.parametrize("shell", ["bash", "fish"])
def test_use_and_off_at_a_terminal_without_the_hook_say_how_to_apply(standard_host, tmp_path, shell):
    """Typed at the prompt, `use 13.1` changes nothing: the code still goes to stdout (the terminal)
    and stderr says in one line how to apply it; through eval or the hook no such line appears."""
    err = tmp_path / "err"
    sh = Interactive(shell, standard_host.env, cwd=str(tmp_path))
    try:
        shown = sh.run("cudaswitch use 13.1 2>%s" % err)
        assert "CUDA_HOME" in shown and "cudaswitch/" not in shown.replace("cudaswitch use", "")
        lines = [l for l in err.read_text().splitlines() if "to apply it" in l]
        apply = "cudaswitch use 13.1 | source" if shell == "fish" else 'eval "$(cudaswitch use 13.1)"'
        assert len(lines) == 1 and apply in lines[0] and "init " + shell in lines[0], err.read_text()
        sh.run(shellrun.EVAL_USE[shell].format(cmd="use 13.1") + " 2>%s" % err)
        assert "to apply it" not in err.read_text()
        sh.run("cudaswitch off 2>%s" % err)
        assert "cudaswitch off" in err.read_text() and "to apply it" in err.read_text()
        sh.run(INIT[shell])
        sh.run("cudaswitch use 13.1 2>%s" % err)  # the hook's function evaluates it: nothing to say
        assert "to apply it" not in err.read_text()
    finally:
        sh.close()


def test_local_and_global_without_a_value_print_the_current_one(standard_host, tmp_path):
    inner = tmp_path / "proj" / "src"
    inner.mkdir(parents=True)
    none = standard_host.run("local", cwd=inner)
    assert none.returncode == 1 and none.stdout == "" and "no project file" in none.stderr
    (tmp_path / "proj" / ".cudaversion").write_text("13.1\n")
    shown = standard_host.run("local", cwd=inner)
    assert shown.returncode == 0 and shown.stdout == "13.1\n"
    assert shown.stderr.strip() == "cudaswitch: from %s" % (tmp_path / "proj" / ".cudaversion")
    config = standard_host.work / "config" / "config.toml"
    unset = standard_host.run("global", "--unset")
    assert unset.returncode == 0 and "no default toolkit was set" in unset.stderr and not config.exists()
    empty = standard_host.run("global")
    assert empty.returncode == 1 and empty.stdout == "" and "no default toolkit is set" in empty.stderr
    standard_host.run("global", "13.0", check=True)
    got = standard_host.run("global")
    assert got.returncode == 0 and got.stdout == "13.0\n" and str(config) in got.stderr
    assert "removed" in standard_host.run("global", "--unset").stderr


@pytest.fixture
def config_restored(standard_host):
    """The session's standard host keeps the config it had: later modules read its default."""
    config = standard_host.work / "config" / "config.toml"
    before = config.read_bytes() if config.exists() else None
    yield config
    if before is None:
        config.unlink(missing_ok=True)
    else:
        config.write_bytes(before)


def test_config_get_set_unset(standard_host, config_restored):
    config = config_restored
    default = standard_host.run("config", "get", "probe_timeout")
    assert default.returncode == 0 and default.stdout == "5\n" and "default" in default.stderr
    assert standard_host.run("config", "set", "verdict", "problems").returncode == 0
    assert standard_host.run("config", "set", "source_order", "managed, system").returncode == 0
    assert standard_host.run("config", "set", "default", "13.1").returncode == 0
    text = config.read_text()
    assert 'verdict = "problems"' in text and 'default = "13.1"' in text  # a version stays text
    assert standard_host.run("config", "get", "source_order").stdout == "managed,system\n"
    got = standard_host.run("config", "get", "verdict")
    assert got.stdout == "problems\n" and str(config) in got.stderr
    for bad in (["verdictt", "all"], ["verdict", "loud"], ["torch_timeout", "-3"], ["probe_exec", "maybe"],
                ["source_order", "managed,rpm"]):
        proc = standard_host.run("config", "set", *bad)
        assert proc.returncode == 2 and proc.stdout == "" and len(proc.stderr.splitlines()) == 1, (bad, proc.stderr)
        assert "Traceback" not in proc.stderr
    assert "did you mean verdict" in standard_host.run("config", "set", "verdictt", "all").stderr
    assert config.read_text() == text  # refused values wrote nothing
    assert standard_host.run("config", "unset", "verdict").returncode == 0
    assert "verdict" not in config.read_text() and 'default = "13.1"' in config.read_text()
    again = standard_host.run("config", "unset", "verdict")
    assert again.returncode == 0 and "was not set" in again.stderr
    unset = standard_host.run("config", "get", "python")
    assert unset.returncode == 1 and unset.stdout == "" and "not set" in unset.stderr
    assert standard_host.run("config", "get", "nosuch").returncode == 2


def test_exec_of_a_missing_or_unrunnable_command_exits_as_a_shell_does(standard_host, tmp_path):
    missing = standard_host.run("exec", "13.1", "--", "no-such-command-xyz")
    assert missing.returncode == 127 and "no-such-command-xyz" in missing.stderr and missing.stdout == ""
    script = tmp_path / "tool.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(stat.S_IRUSR | stat.S_IWUSR)
    unrunnable = standard_host.run("exec", "13.1", "--", str(script))
    assert unrunnable.returncode == 126 and unrunnable.stdout == ""


@pytest.mark.parametrize("name, body", [(".cudaversion", "\ufeff13.1\r\n"),
                                        (".tool-versions", "\ufeffpython 3.12\r\ncuda 13.1\r\n")])
def test_a_project_file_from_a_windows_editor_is_read(standard_host, tmp_path, name, body):
    """Notepad writes a byte-order mark and CRLF line ends; the file still names 13.1, for `use`
    through hook-env and for the hook in a real bash on `cd`."""
    project = tmp_path / "winproj"
    project.mkdir()
    (project / name).write_bytes(body.encode("utf-8"))
    shown = standard_host.run("local", cwd=project)
    assert shown.returncode == 0 and shown.stdout == "13.1\n", shown.stderr
    proc = standard_host.run("hook-env", "--shell", "bash", cwd=project)
    assert proc.returncode == 0 and "cuda-13.1" in proc.stdout, proc.stderr
    sh = Interactive("bash", standard_host.env, cwd=str(tmp_path))
    try:
        sh.run(INIT["bash"])
        out = sh.run("cd %s" % project)
        assert "error" not in out, out
        assert "release 13.1" in sh.run("nvcc --version")
    finally:
        sh.close()


def test_audit_html_of_one_host_is_the_merge_page_in_chromium(standard_host, tmp_path):
    """`audit --html FILE` writes the page `audit merge --html` makes of this host's report: the
    same bytes, one node (never "1 nodes"), and it runs in a real headless Chromium without errors;
    a filter naming the host says "1 of 1 node matches"."""
    from tests import browser_support as browser

    report = tmp_path / "host.json"
    report.write_text(standard_host.run("audit", "--json", check=True).stdout)
    merged, own = tmp_path / "merged.html", tmp_path / "own.html"
    standard_host.run("audit", "merge", str(report), "--html", str(merged), check=True)
    proc = standard_host.run("audit", "--html", str(own))
    assert proc.returncode == 0 and "VERSION" in proc.stdout, proc.stderr
    assert own.read_bytes() == merged.read_bytes()
    dom, console = browser.load(own.as_uri(), tmp_path / "profile")
    assert console == [] and 'data-ready="1"' in dom
    assert "<title>cudaswitch audit: 1 node</title>" in dom and "1 nodes" not in dom
    host = json.loads(report.read_text())["host"]
    filtered, console = browser.load(own.as_uri() + "#filter=" + host, tmp_path / "profile")
    assert console == [] and "1 of 1 node matches" in filtered
