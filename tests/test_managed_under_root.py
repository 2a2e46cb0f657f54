"""An audit of a root or an image names only what is in it: the invoking user's managed toolkits
(in their own data dir, ~/.local/share/cudaswitch) are not the audited root's, so a root prefix
(`CUDASWITCH_ROOT`, `audit --root`) does not list them; without a root prefix `list` does."""

import json
import os

import pytest

from tests import kits
from tests.conftest import Host

NO_ROOT_PREFIX = {"CUDASWITCH_ROOT": "/"}  # this host itself, as a user runs cudaswitch


@pytest.fixture()
def user_with_managed_13_1(tmp_path):
    """A user whose default data dir ($XDG_DATA_HOME/cudaswitch) holds a managed 13.1, and an
    empty root to audit."""
    data_home = tmp_path / "xdg-data"
    toolkits = data_home / "cudaswitch" / "toolkits"
    kits.install_classic(kits.cuda13("13.1"), toolkits / "13.1.0", "13.1")
    for path in (data_home / "cudaswitch", toolkits):
        path.chmod(0o700)
    (tmp_path / "root").mkdir()
    host = Host(tmp_path / "root", tmp_path / "work")
    del host.env["CUDASWITCH_DATA_DIR"]  # the data dir is the user's default one
    host.env["XDG_DATA_HOME"] = str(data_home)
    return host, str(toolkits / "13.1.0")


def test_list_without_a_root_prefix_shows_the_users_managed_toolkit(user_with_managed_13_1):
    host, managed = user_with_managed_13_1
    proc = host.run("list", "--json", env=NO_ROOT_PREFIX)
    assert proc.returncode == 0, proc.stderr
    assert managed in [item["root"] for item in json.loads(proc.stdout)]


def test_a_root_prefix_does_not_list_the_users_managed_toolkits(user_with_managed_13_1):
    host, managed = user_with_managed_13_1
    proc = host.run("list", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []


def test_audit_of_a_root_names_only_what_is_in_it(user_with_managed_13_1, tmp_path):
    host, managed = user_with_managed_13_1
    audited = tmp_path / "node"
    kits.install_classic(kits.cuda13("13.0"), audited / "usr/local/cuda-13.0", "13.0")
    proc = host.run("audit", "--root", str(audited), "--json", env=NO_ROOT_PREFIX)
    # the audit's exit status reports the root's findings; the report is what is checked
    report = json.loads(proc.stdout)
    roots = [t["root"] for t in report["toolkits"]]
    assert roots == [str(audited / "usr/local/cuda-13.0")], roots
    assert not any(managed in json.dumps(check) for check in report["checks"]), report["checks"]
    assert "installed 2 times" not in proc.stderr + proc.stdout
    assert os.path.isdir(managed)  # the user's toolkit is untouched
