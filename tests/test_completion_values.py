"""What TAB offers for each kind of value, in a real interactive bash on a pty: `uninstall` only
managed toolkits (never the system's), `install` releases that can be installed (not only what is
here), `torch --gpu` architecture names (not file names), and `exec 13.1 -- nv` that toolkit's
commands. The managed toolkit is made by the real `install --from pypi` from local wheels."""

import time

import pytest

from tests import kits, release_wheels
from tests.install_support import drop_installed_trees  # noqa: F401 (autouse fixture)
from tests.shellrun import INIT, Interactive


@pytest.fixture()
def mixed_host(host, tmp_path):
    """System 13.0 under /usr/local and one managed 13.2."""
    kits.install_classic(kits.cuda13("13.0"), host.path("/usr/local/cuda-13.0"), "13.0")
    env = release_wheels.index_of(tmp_path / "links", "13.2.0.0")
    proc = host.run("install", "13.2", "--from", "pypi", "-c", "cudart", env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    host.run("list", check=True)  # the registry is cached, as after any command
    return host


def offered(sh, typed):
    """The candidates bash lists for `typed` on TAB TAB; the line is then cleared, nothing runs."""
    sh.send(typed + "\t\t")
    time.sleep(2)
    sh.send("\x15")  # Ctrl-U: kill the typed line
    return sh.run("", timeout=60)


def test_tab_offers_the_values_each_argument_takes(mixed_host, tmp_path):
    work = tmp_path / "cwd"
    work.mkdir()
    (work / "sm_8-notes.txt").write_text("a file TAB must not offer for --gpu\n")
    (work / "13-draft.txt").write_text("nor for uninstall\n")
    sh = Interactive("bash", mixed_host.env, cwd=str(work))
    try:
        sh.run(INIT["bash"])
        uninstall = offered(sh, "cudaswitch uninstall ")  # bash falls back to file names when offered none
        install = offered(sh, "cudaswitch install 12.")
        gpu = offered(sh, "cudaswitch torch --gpu sm_8")
        ran = sh.run("cudaswitch exec 13.0 -- nvc\t --version")
    finally:
        sh.close()
    [managed] = [i["version"] for i in mixed_host.list_json().values() if "managed" in i["sources"]]
    assert managed in uninstall and "managed:" in uninstall, uninstall
    assert "13.0" not in uninstall and "system:" not in uninstall and "13-draft" not in uninstall, uninstall
    assert "12.8" in install and "12.4" in install, install
    assert "sm_86" in gpu and "sm_80" in gpu and "notes" not in gpu, gpu
    assert "release 13.0" in ran, ran
