"""One command table, two parsers: the fast parser and the typer app must accept exactly the same
command lines with the same meaning. Every command is run with each of its own options (both paths
must hand the handler the same values) and with every option that belongs only to other commands
(both paths must refuse it: exit 2, one line on stderr, nothing on stdout). The handler is replaced
by a recorder, so nothing runs on this host: these are the parsers' answers alone."""

import pytest

from cudaswitch.cli import main as cli_main
from cudaswitch.cli import table
from cudaswitch.cli.parse import parse

# The smallest valid positionals of each command.
MINIMAL = {"use": ["12.4"], "exec": ["12.4", "--", "true"], "init": ["bash"], "system": ["12.4"],
           "explain": ["CUDA error: no kernel image"], "install": ["13.1"], "uninstall": ["13.0"],
           "direnv-use": ["--", "13.0"], "kernel install": ["13.0"], "kernel remove": ["cuda-13.0"],
           "config get": ["verdict"], "config set": ["verdict", "all"], "config unset": ["verdict"]}
ALL_OPTIONS = {name: opt for command in table.COMMANDS for opt in command.options for name in opt.names}


def _sample(opt):
    return {"str": ["x"], "float": ["1.5"]}.get(opt.kind, [])


def _run(monkeypatch, capsys, argv, typer_path):
    """(exit status, stdout, stderr, values the handler got or None)."""
    seen = {}

    def record(command, values):
        seen.update(values, _command=command.name)
        return 0

    monkeypatch.setattr(cli_main, "run_handler", record)
    if typer_path:
        monkeypatch.setenv(cli_main.TYPER_ONLY, "1")
    else:
        monkeypatch.delenv(cli_main.TYPER_ONLY, raising=False)
    code = cli_main.main(argv)
    out, err = capsys.readouterr()
    return code, out, err, (seen or None)


def _cases_own():
    for command in table.COMMANDS:
        for opt in command.options:
            for name in opt.names:
                yield pytest.param(command, opt, name, id="%s %s" % (command.name, name))


def _cases_foreign():
    for command in table.COMMANDS:
        for name, opt in sorted(ALL_OPTIONS.items()):
            if command.option(name) is None:
                yield pytest.param(command, name, opt, id="%s %s" % (command.name, name))


@pytest.mark.parametrize("command, opt, name", list(_cases_own()))
def test_own_option_means_the_same_on_both_paths(monkeypatch, capsys, command, opt, name):
    argv = list(command.path) + [name] + _sample(opt) + MINIMAL.get(command.name, [])
    fast = _run(monkeypatch, capsys, argv, typer_path=False)
    slow = _run(monkeypatch, capsys, argv, typer_path=True)
    assert fast[0] == slow[0] == 0, (fast, slow)
    assert fast[3] == slow[3], "the two parsers disagree on %s" % argv
    expected = {"str": "x", "float": 1.5}.get(opt.kind, True)
    got = fast[3][opt.dest]
    assert got == ([expected] if opt.many else expected), argv


@pytest.mark.parametrize("command, name, opt", list(_cases_foreign()))
def test_an_option_of_another_command_is_one_usage_line_on_both_paths(monkeypatch, capsys, command, name, opt):
    argv = list(command.path) + MINIMAL.get(command.name, [])
    if any(a.nargs == "rest" for a in command.args):  # exec: options go before the command line
        argv = list(command.path) + [name] + _sample(opt) + MINIMAL[command.name]
    else:
        argv += [name] + _sample(opt)
    for typer_path in (False, True):
        code, out, err, seen = _run(monkeypatch, capsys, argv, typer_path)
        assert (code, out, seen) == (2, "", None), (typer_path, argv, err)
        assert len(err.splitlines()) == 1 and "No such option" in err, (typer_path, err)


@pytest.mark.parametrize("argv", [["use"], ["use", "1", "2"], ["init", "tcsh"], ["verify", "--timeout", "soon"],
                                  ["use", "12.4", "--shell"], ["list", "--json=yes"], ["which", "a", "b", "c"]])
def test_bad_command_lines_are_refused_alike(monkeypatch, capsys, argv):
    for typer_path in (False, True):
        code, out, err, seen = _run(monkeypatch, capsys, argv, typer_path)
        assert (code, out, seen) == (2, "", None) and len(err.splitlines()) == 1, (typer_path, argv, err)


def test_verbose_before_the_command_and_among_its_options(monkeypatch, capsys):
    for argv in (["-v", "use", "12.4"], ["use", "12.4", "--verbose"], ["--verbose", "list", "--json"]):
        for typer_path in (False, True):
            code, _, err, seen = _run(monkeypatch, capsys, argv, typer_path)
            assert code == 0 and seen is not None, (argv, typer_path, err)


def test_exec_keeps_the_options_of_the_command_it_runs(monkeypatch, capsys):
    for argv in (["exec", "12.4", "--", "nvcc", "--version", "-v"], ["exec", "12.4", "nvcc", "--help"]):
        fast = _run(monkeypatch, capsys, argv, typer_path=False)[3]
        slow = _run(monkeypatch, capsys, argv, typer_path=True)[3]
        assert fast == slow and fast["cmd"][-2:] == argv[-2:] and fast["verbose"] is False


def test_every_option_and_argument_has_help():
    for command in table.COMMANDS:
        assert command.help and command.examples, command.name
        for item in command.options + command.args:
            assert item.help and len(item.help) > 10, (command.name, item)


def test_the_fast_parser_fills_every_handler_argument():
    import inspect

    for command in table.COMMANDS:
        module, _, function = command.handler.partition(":")
        handler = getattr(__import__(module, fromlist=[function]), function)
        values = parse(command, MINIMAL.get(command.name, []))
        values.pop("verbose")
        inspect.signature(handler).bind(**values)  # raises when table and handler disagree
