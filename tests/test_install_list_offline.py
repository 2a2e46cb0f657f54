"""`install --list` offline: with the redist server unreachable and nothing cached the error
names `--from pypi`; with the package index pip uses unreachable, `install --list --from pypi`
answers from its last listing of that index, labelled with the listing's age."""

import json
import socket

from tests.conftest import Host
from tests.test_install_list_pypi import index, pip_env  # noqa: F401 (fixture)


def closed_port_url():
    """A 127.0.0.1 URL nothing listens on: connection refused at once, no network involved."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return "http://127.0.0.1:%d/" % port


def test_unreachable_redist_with_nothing_cached_names_the_wheels(tmp_path):
    (tmp_path / "root").mkdir()
    host = Host(tmp_path / "root", tmp_path / "work")
    (host.work / "config").mkdir(parents=True)
    (host.work / "config" / "config.toml").write_text('redist_url = "%s"\n' % (closed_port_url() + "redist/"))
    proc = host.run("install", "--list", timeout=300)
    assert proc.returncode != 0 and proc.stdout == ""
    [line] = proc.stderr.splitlines()
    assert "cudaswitch install --list --from pypi" in line, line


def test_unreachable_index_answers_from_the_last_listing_with_its_age(index, tmp_path):  # noqa: F811
    server, base = index
    (tmp_path / "root").mkdir()
    host = Host(tmp_path / "root", tmp_path / "work")
    env = pip_env(base + "simple/")
    online = host.run("install", "--list", "--from", "pypi", "--json", env=env, timeout=300)
    assert online.returncode == 0, online.stderr
    server.shutdown()
    server.server_close()
    offline = host.run("install", "--list", "--from", "pypi", "--json", env=env, timeout=300)
    assert offline.returncode == 0, offline.stderr
    before, after = json.loads(online.stdout), json.loads(offline.stdout)
    assert [r["release"] for r in after["releases"]] == [r["release"] for r in before["releases"]]
    assert after["offline"] is True and after["cached_at"].endswith("old")
    table = host.run("install", "--list", "--from", "pypi", env=env, timeout=300)
    assert table.returncode == 0, table.stderr
    assert "offers no release now (offline?); releases from the cached listing of" in table.stderr
    assert "less than a minute old" in table.stderr

