"""`install --list --from pypi` answers from the package index pip uses, never from NVIDIA's redist
server: a user behind a PyPI proxy (PIP_INDEX_URL) without access to developer.download.nvidia.com
lists the cuda-toolkit wheel releases. The index is a PEP 503 simple index served on 127.0.0.1,
configured the way users configure pip; no test reaches the internet."""

import http.server
import json
import os
import threading

import pytest

from tests.conftest import Host

RELEASES = ("12.9.1", "13.0.1", "13.0.2", "13.1.0")


class RecordingHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the index dir and records every path asked for."""

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.server.seen.append(self.path)
        super().do_GET()


@pytest.fixture()
def index(tmp_path):
    """A simple index holding cuda-toolkit (and, beside it, a redist mirror path that must stay unasked)."""
    project = tmp_path / "index" / "simple" / "cuda-toolkit"
    project.mkdir(parents=True)
    links = "".join('<a href="cuda_toolkit-%s-py3-none-any.whl">cuda_toolkit-%s-py3-none-any.whl</a>\n'
                    % (v, v) for v in RELEASES)
    (project / "index.html").write_text("<!DOCTYPE html><html><body>\n%s</body></html>\n" % links)
    handler = lambda *a, **kw: RecordingHandler(*a, directory=str(tmp_path / "index"), **kw)  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads, server.seen = True, []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server, "http://127.0.0.1:%d/" % server.server_address[1]
    server.shutdown()
    server.server_close()


def pip_env(index_url):
    """pip as a user behind a proxy configures it: only this index, no pip.conf, no find-links."""
    return {"PIP_CONFIG_FILE": os.devnull, "PIP_INDEX_URL": index_url, "PIP_FIND_LINKS": "",
            "PIP_EXTRA_INDEX_URL": "", "PIP_NO_INDEX": "", "PIP_RETRIES": "0", "PIP_DEFAULT_TIMEOUT": "10"}


def host_with_redist_url(tmp_path, url):
    """A host whose config names a redist mirror: --from pypi must not ask it."""
    (tmp_path / "root").mkdir()
    host = Host(tmp_path / "root", tmp_path / "work")
    (host.work / "config").mkdir(parents=True)
    (host.work / "config" / "config.toml").write_text('redist_url = "%s"\n' % url)
    return host


def test_list_from_pypi_names_the_wheel_releases_and_asks_only_the_index(index, tmp_path):
    server, base = index
    host = host_with_redist_url(tmp_path, base + "compute/cuda/redist/")
    proc = host.run("install", "--list", "--from", "pypi", "--json", env=pip_env(base + "simple/"), timeout=300)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert [r["release"] for r in result["releases"]] == ["13.1.0", "13.0.2", "13.0.1", "12.9.1"]
    assert result["releases"][0]["package"] == "cuda-toolkit==13.1.0"
    assert result["source"] == "pypi" and result["base"] == base + "simple/"
    assert server.seen and all(path.startswith("/simple/") for path in server.seen), server.seen


def test_list_from_pypi_as_a_table(index, tmp_path):
    """What a person reads: one row per release, and where the answer came from on stderr."""
    server, base = index
    host = host_with_redist_url(tmp_path, base + "compute/cuda/redist/")
    proc = host.run("install", "--list", "--from", "pypi", env=pip_env(base + "simple/"), timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].split() == ["RELEASE", "PACKAGE", "CONTENTS", "DRIVER"]
    rows = proc.stdout.splitlines()[1:]
    assert [line.split()[0] for line in rows] == ["13.1.0", "13.0.2", "13.0.1", "12.9.1"]
    # NVIDIA's 12.x wheels hold no nvcc: the row says so, and stderr names the complete 12.x source
    assert [("runtime only, no nvcc" in line) for line in rows] == [False, False, False, True]
    assert "cudaswitch install 12.4` (NVIDIA's redist archives" in proc.stderr
    assert "wheels on %ssimple/ (through pip)" % base in proc.stderr
    assert not any(path.startswith("/compute") for path in server.seen)


def test_unreachable_index_is_one_line_naming_it(tmp_path):
    """The proxy is down: the error names the index pip tried, not NVIDIA's server."""
    (tmp_path / "root").mkdir()
    host = Host(tmp_path / "root", tmp_path / "work")
    dead = "http://127.0.0.1:9/simple/"  # the discard port: nothing listens there
    # one retry, as pip's default five do: pip says "connection broken" before it gives up
    proc = host.run("install", "--list", "--from", "pypi", env={**pip_env(dead), "PIP_RETRIES": "1"}, timeout=300)
    assert proc.returncode != 0 and proc.stdout == ""
    assert dead in proc.stderr and "nvidia.com" not in proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("cudaswitch: error: ") and "cannot be reached" in proc.stderr


def test_index_without_the_package_says_so_naming_it(index, tmp_path):
    server, base = index
    (tmp_path / "root").mkdir()
    host = Host(tmp_path / "root", tmp_path / "work")
    empty = base + "nothing/"  # an index dir with no cuda-toolkit project
    proc = host.run("install", "--list", "--from", "pypi", env=pip_env(empty), timeout=300)
    assert proc.returncode != 0 and proc.stdout == ""
    assert "offers no cuda-toolkit release: %s" % empty in proc.stderr
    assert "Traceback" not in proc.stderr


def test_from_pypi_with_a_mirror_is_a_usage_error(tmp_path):
    (tmp_path / "root").mkdir()
    host = Host(tmp_path / "root", tmp_path / "work")
    proc = host.run("install", "--list", "--from", "pypi", "--mirror", "file:///srv/mirror")
    assert proc.returncode == 2 and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) <= 2 and "--mirror" in proc.stderr
