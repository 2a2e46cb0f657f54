"""`config show`: what a user checks after editing config.toml: their keys, over the defaults,
the same in TOML (for people) and JSON (for scripts)."""

import json
import sys

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib


def test_config_show_gives_the_files_keys_over_the_defaults(host):
    config = host.work / "config" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('default = "13.1"\nprobe_timeout = 9\n')
    shown = json.loads(host.run("config", "show", "--json", check=True).stdout)
    assert shown["file"] == str(config)
    assert shown["settings"]["default"] == "13.1" and shown["settings"]["probe_timeout"] == 9
    assert shown["settings"]["source_order"][0] == "user"  # a default the file does not set
    as_toml = host.run("config", "show", check=True)
    assert tomllib.loads(as_toml.stdout) == shown["settings"]
    assert str(config) in as_toml.stderr


def test_config_show_of_a_broken_file_is_one_line(host):
    config = host.work / "config" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("default = \n")
    proc = host.run("config", "show")
    assert proc.returncode == 1 and proc.stdout == "" and len(proc.stderr.splitlines()) == 1, proc.stderr


def _config(host, text):
    config = host.work / "config" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(text)
    return config


def test_a_typo_is_named_with_the_key_it_meant_and_breaks_nothing(host):
    """A user wrote `loader-path = false` (a dash, as in the option names): it was accepted
    silently, shown by `config show`, and did not apply. Now every command names it and the
    nearest setting on one stderr line, and still works (the hook reads this file at a prompt)."""
    config = _config(host, 'loader-path = false\nverdikt = "off"\n')
    for args in (("config", "show"), ("config", "show", "--json"), ("list",)):
        proc = host.run(*args)
        assert proc.returncode == 0, (args, proc.stderr)
        warnings = [line for line in proc.stderr.splitlines() if "unknown key" in line]
        assert warnings == [
            "cudaswitch: warning: %s: unknown key 'loader-path' is ignored (did you mean loader_path?)" % config,
            "cudaswitch: warning: %s: unknown key 'verdikt' is ignored (did you mean verdict?)" % config], args
    prompt = host.run("hook-env", "--shell", "bash")
    assert prompt.returncode == 0 and "Traceback" not in prompt.stderr, prompt.stderr
    shown = host.run("config", "show", check=True).stdout
    assert "did you mean loader_path?" in shown and "unknown key, ignored" in shown
    assert "Traceback" not in shown


def test_config_show_lists_every_setting_and_where_it_came_from(host):
    """`config show` left out the defaults of verdict, loader_path, torch_timeout and python: a
    user could not see what applied. Every setting is listed, each with its origin."""
    from cudaswitch import config as configmod

    _config(host, 'torch_timeout = 10\nverdict = "problems"\n')
    shown = json.loads(host.run("config", "show", "--json", check=True).stdout)
    assert set(configmod.CHECKS) <= set(shown["origins"])
    assert shown["origins"]["torch_timeout"] == "config.toml" and shown["settings"]["torch_timeout"] == 10
    assert shown["origins"]["loader_path"] == "default" and shown["settings"]["loader_path"] is True
    assert shown["settings"]["verdict"] == "problems" and shown["origins"]["verdict"] == "config.toml"
    assert shown["unset"]["python"] == "the first python3 on the switched PATH"
    text = host.run("config", "show", check=True).stdout
    lines = {line.split()[0].lstrip("#"): line for line in text.splitlines() if line.strip("# ")}
    for key in ("verdict", "loader_path", "torch_timeout", "probe_exec", "source_order"):
        assert key in lines, (key, text)
    assert lines["torch_timeout"].endswith("# config.toml") and lines["loader_path"].endswith("# default")
    assert "python is not set" in text
    assert tomllib.loads(text) == shown["settings"]


def test_the_defaults_shown_are_the_ones_that_apply():
    """`config show` states defaults that other modules apply: they must not drift apart."""
    from cudaswitch import config as configmod
    from cudaswitch import settings

    for key, value in settings.SWITCH_DEFAULTS.items():
        assert configmod.EFFECTIVE_DEFAULTS[key] == value, key
    assert configmod.EFFECTIVE_DEFAULTS["torch_timeout"] == settings.TORCH_TIMEOUT
    assert set(configmod.EFFECTIVE_DEFAULTS) == set(configmod.CHECKS)
