"""A mirror's Location header is the server's text: one that does not even parse as a URL (a port
past 65535, a broken IPv6 literal, a port of letters) is refused in one line like a redirect to
another host, never a traceback."""

import pytest

from tests import hostile_archives, hostile_mirror
from tests.conftest import Host


@pytest.mark.parametrize("location", ["http://127.0.0.1:99999/redist/", "http://[::1/redist/",
                                      "http://127.0.0.1:abc/redist/"])
def test_a_location_that_is_no_url_is_one_line(tmp_path, location):
    (tmp_path / "root").mkdir()
    host = Host(tmp_path / "root", tmp_path / "work")
    hostile_mirror.build(tmp_path / "mirror" / "redist", hostile_archives.tar_bytes([]))
    served = hostile_mirror.HostileServer(tmp_path / "mirror")
    served.server.redirect = location
    try:
        proc = host.run("install", "--list", "--json", "--mirror", served.url, timeout=60)
    finally:
        served.close()
    assert proc.returncode == 1 and proc.stdout == "" and "Traceback" not in proc.stderr, proc.stderr
    [line] = proc.stderr.splitlines()
    assert line.startswith("cudaswitch: error: ") and "refused" in line, line
