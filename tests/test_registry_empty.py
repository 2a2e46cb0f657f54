"""A host with no toolkit at all (a fresh container): `list` and a failed request say where
cudaswitch looked, in the configured source order — built from the same list discovery walked."""

import json

from cudaswitch.request import SOURCES


def test_empty_host_list_says_where_it_looked(host):
    proc = host.run("list")
    assert proc.returncode == 0 and proc.stdout == ""
    [line] = proc.stderr.splitlines()
    assert line.startswith("cudaswitch: no CUDA toolkits found; searched user: ")
    positions = [line.index(name + ": ") for name in SOURCES]
    assert positions == sorted(positions) and "/usr/local/cuda*" in line
    assert json.loads(host.run("list", "--json").stdout) == []


def test_not_found_on_an_empty_host_follows_the_configured_order(host):
    config = host.work / "config"
    config.mkdir(parents=True)
    (config / "config.toml").write_text('source_order = ["conda", "pip", "system"]\n')
    proc = host.run("which", "12")
    assert proc.returncode == 1 and proc.stdout == ""
    [line] = proc.stderr.splitlines()
    assert "no toolkits found at all" in line
    searched = line[line.index("searched "):]
    assert searched.index("conda: ") < searched.index("pip: ") < searched.index("system: ")
