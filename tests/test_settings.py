"""One settings module: every default is stated once in cudaswitch/settings.py, and what applies,
what `config show` says and what --help says agree with it; every CUDASWITCH_* environment variable
the package reads is in its one list, documented in the README or marked test-only. Mirrors the
defaults that drifted apart (--timeout's help said 15 s while 60 s applied; probe_timeout 5.0 in three
places, then raised to 10)."""

import re
from pathlib import Path

from cudaswitch import settings

TOP = Path(__file__).resolve().parent.parent
PACKAGE = TOP / "cudaswitch"
# A CUDASWITCH_* name as code reads it: not the tail of another name (typer's _CUDASWITCH_COMPLETE).
NAME = re.compile(r"(?<![A-Za-z0-9_])(CUDASWITCH_[A-Z][A-Z0-9_]*)")


def names_read_by_the_package():
    """{name: files} over the package's code and the shell hooks it ships (settings.py left out)."""
    found = {}
    for path in PACKAGE.rglob("*"):
        if path.is_file() and path.suffix not in (".pyc",) and path.name != "settings.py" and "__pycache__" not in \
                path.parts and path.suffix not in (".toml", ".json"):
            for name in NAME.findall(path.read_text(encoding="utf-8", errors="replace")):
                found.setdefault(name, set()).add(str(path.relative_to(PACKAGE)))
    return found


def test_every_environment_variable_is_listed_once_and_read():
    read = names_read_by_the_package()
    assert len(read) >= 15  # the scan sees them at all
    assert sorted(set(read) - set(settings.ENVIRONMENT)) == []  # read but not listed
    assert sorted(set(settings.ENVIRONMENT) - set(read)) == []  # listed but read by nothing


def test_every_user_variable_is_documented_in_the_readme():
    readme = (TOP / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Environment variables"):]
    section = section[:section.index("\n## ", 1)]
    documented = set(NAME.findall(section))
    users = set(settings.ENVIRONMENT) - set(settings.TEST_ONLY)
    assert sorted(users - documented) == []
    assert sorted(documented - set(settings.ENVIRONMENT)) == []
    assert settings.TEST_ONLY and all(settings.ENVIRONMENT[n].startswith("test-only") for n in settings.TEST_ONLY)


def test_the_defaults_that_apply_are_the_settings(tmp_path):
    """An empty config gives settings.py's numbers to verify's Host, to `config show` and to use."""
    from cudaswitch import config
    from cudaswitch.paths import Paths
    from cudaswitch.verify import host as hostmod

    paths = Paths({"HOME": str(tmp_path), "CUDASWITCH_CONFIG_DIR": str(tmp_path / "conf"),
                   "CUDASWITCH_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"})
    conf = hostmod.settings(paths)
    assert conf["torch_timeout"] == settings.TORCH_TIMEOUT and conf["probe_timeout"] == settings.PROBE_TIMEOUT
    host = hostmod.Host(paths, {"records": []}, {}, record=None, conf=conf)
    assert host.timeout == settings.TORCH_TIMEOUT and host.probe_timeout == settings.VERIFY_PROBE_TIMEOUT
    assert config.EFFECTIVE_DEFAULTS["torch_timeout"] == settings.TORCH_TIMEOUT
    assert config.EFFECTIVE_DEFAULTS["probe_timeout"] == settings.PROBE_TIMEOUT
    assert config.switch_settings(paths) == settings.SWITCH_DEFAULTS
    assert config.EFFECTIVE_DEFAULTS["verdict"] in settings.VERDICT_MODES


def test_help_says_the_default_that_applies(host):
    """What a user reads in `verify --help` is the timeout that applies without a config."""
    out = host.run("verify", "--help", check=True).stdout
    assert "else %g)" % settings.TORCH_TIMEOUT in " ".join(out.split())
