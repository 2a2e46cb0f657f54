"""What makes a repeated command cheap stays true: the caches are used and nothing is rewritten
for nothing. Real `cudaswitch` runs against the standard host."""

import os
import sys


def test_torch_plan_starts_the_python_once(standard_host, tmp_path):
    """`cudaswitch torch --driver 550.54 --gpu sm_86` run twice, as someone comparing GPUs does: the
    installed-torch probe runs the user's python3 the first time only (its cache used to refuse
    every probe, so each plan started the Python again)."""
    log = tmp_path / "python-runs"
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "python3").write_text("#!/bin/sh\necho run >> '%s'\nexec '%s' \"$@\"\n" % (log, sys.executable))
    (bindir / "python3").chmod(0o755)
    env = {"PATH": "%s:%s" % (bindir, standard_host.env["PATH"]), "VIRTUAL_ENV": "",
           "CUDASWITCH_CACHE_DIR": str(tmp_path / "cache")}
    outs = [standard_host.run("torch", "--driver", "550.54", "--gpu", "sm_86", env=env, check=True).stdout
            for _ in range(2)]
    assert outs[0] == outs[1] and "pip install" in outs[0]
    assert log.read_text().count("run") == 1


def test_global_again_leaves_config_toml_alone(standard_host, tmp_path):
    """`cudaswitch global 13.1` a second time (a setup script run twice) writes nothing: config.toml's
    mtime is part of the registry cache's key, and a rewrite made the next command discover again."""
    env = {"CUDASWITCH_CONFIG_DIR": str(tmp_path / "config")}
    standard_host.run("global", "13.1", env=env, check=True)
    config = tmp_path / "config" / "config.toml"
    stamp, text = os.stat(config).st_mtime_ns, config.read_text()
    again = standard_host.run("global", "13.1", env=env, check=True)
    assert os.stat(config).st_mtime_ns == stamp and config.read_text() == text and again.stdout == ""
    standard_host.run("global", "13.0", env=env, check=True)
    assert "13.0" in config.read_text()


def test_a_fast_command_says_what_typer_says(standard_host):
    """The fast parser and the typer app are generated from one table: what a user pipes or evals
    arrives the same through either, with the exit status and the one error line."""
    typer = {"CUDASWITCH_NO_FAST": "1"}
    for args in (("use", "13.0", "--shell", "bash"), ("list", "--json"), ("use", "99.9")):
        fast, slow = standard_host.run(*args), standard_host.run(*args, env=typer)
        assert (fast.returncode, fast.stdout, fast.stderr) == (slow.returncode, slow.stdout, slow.stderr), args
    failed = standard_host.run("use", "99.9")
    assert failed.returncode == 1 and failed.stdout == "" and len(failed.stderr.splitlines()) == 1


def test_a_closed_stdout_or_a_reader_gone_is_no_traceback(standard_host):
    """`cudaswitch use 99.9 >&-` (a closed stdout) gives its one error line, and `cudaswitch --help |
    true` (the reader gone before the page is written) ends quietly with 141, as a shell tool killed
    by SIGPIPE does: no traceback from the last flush or from the write itself."""
    import subprocess

    from tests.conftest import CUDASWITCH

    closed = subprocess.run([CUDASWITCH, "use", "99.9"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=standard_host.env, text=True, timeout=60, pass_fds=(), stdin=subprocess.DEVNULL,
                            preexec_fn=lambda: os.close(1))
    assert closed.returncode == 1 and len(closed.stderr.splitlines()) == 1, closed.stderr
    for args in (("--help",), ("list", "--json")):
        child = subprocess.Popen([CUDASWITCH, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 env=standard_host.env, stdin=subprocess.DEVNULL)
        child.stdout.close()  # before the child has started: its first write finds no reader
        err = child.stderr.read().decode()
        assert child.wait(timeout=60) == 141 and "Traceback" not in err and err == "", (args, err)
