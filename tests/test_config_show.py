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
