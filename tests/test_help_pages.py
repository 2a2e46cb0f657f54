"""Every help page as a pipx user reads it: the usage line in click's own notation (REQUEST
required, [REQUEST] optional; typer wrote `{REQUEST}`, which reads like shell brace syntax), and
a closing pointer to what that user has (`--help`, the README), never a path inside the source
repository."""

import subprocess
import sys

from cudaswitch.cli import table


def _pages():
    yield ()
    for command in table.COMMANDS:
        if not command.hidden:
            yield command.path
    yield from ((group,) for group in table.GROUPS)


def test_every_help_page_reads_plainly(host):
    for path in _pages():
        page = host.run(*path, "--help", check=True).stdout
        usage = page.splitlines()[0]
        assert usage.startswith("Usage: cudaswitch"), (path, usage)
        assert "{" not in usage and "}" not in usage, (path, usage)
        assert "docs/architecture.md" not in page and "in the repository" not in page, path
    assert host.run("use", "--help", check=True).stdout.splitlines()[0] == \
        "Usage: cudaswitch use [OPTIONS] REQUEST"
    assert "[REQUEST] [TOOL]" in host.run("which", "--help", check=True).stdout
    assert "cudaswitch COMMAND --help" in host.run("--help", check=True).stdout
    assert "cudaswitch --help" in host.run("verify", "--help", check=True).stdout


def test_fast_help_says_what_typer_says_for_every_page(host):
    """A user reading `cudaswitch COMMAND --help` gets the page the table renders without typer
    (fasthelp.py); the typer app (CUDASWITCH_NO_FAST=1) must print the very same text, options,
    choices and examples included, at a narrow, the default and a wide terminal."""
    pages = [(), ("-h",)] + [path + ("--help",) for path in _pages()]
    pages += [("hook-env", "--help"), ("direnv-use", "--help")]  # hidden, yet they have pages
    for columns in ("40", "", "132"):
        env = {"COLUMNS": columns}
        for words in pages:
            fast = host.run(*words, env=env)
            typer = host.run(*words, env={**env, "CUDASWITCH_NO_FAST": "1"})
            assert (fast.returncode, fast.stdout, fast.stderr) == (typer.returncode, typer.stdout, typer.stderr), \
                (columns, words)
            assert fast.returncode == 0 and fast.stdout.startswith("Usage: cudaswitch"), words
    page = host.run("use", "--help").stdout
    for option in ("--shell SHELL", "--no-verify", "--strict", 'eval "$(cudaswitch use 12.4)"'):
        assert option in page


def test_fast_help_does_not_import_typer(host, tmp_path):
    """`cudaswitch use --help` is rendered from the table: typer and click stay unimported (their
    import alone is ~3x a Python start)."""
    record = tmp_path / "modules.txt"
    runner = ("import sys; sys.argv = ['cudaswitch'] + sys.argv[1:]\nfrom cudaswitch.cli.main import main\n"
              "code = main()\nopen(%r, 'w').write('\\n'.join(sys.modules))\nsys.exit(code)" % str(record))
    for words in (("use", "--help"), ("--help",), ("audit", "merge", "--help"), ("kernel", "--help")):
        proc = subprocess.run([sys.executable, "-c", runner, *words], capture_output=True, text=True, env=host.env,
                              timeout=120)
        assert proc.returncode == 0 and proc.stdout.startswith("Usage: cudaswitch"), proc.stderr
        loaded = {name.split(".")[0] for name in record.read_text().split()}
        assert not loaded & {"typer", "click", "rich"}, words
