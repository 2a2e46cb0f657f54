"""Every help page as a pipx user reads it: the usage line in click's own notation (REQUEST
required, [REQUEST] optional; typer wrote `{REQUEST}`, which reads like shell brace syntax), and
a closing pointer to what that user has (`--help`, the README), never a path inside the source
repository."""

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
