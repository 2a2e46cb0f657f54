"""The registry cache (no --refresh) must notice what really changes on a host after it was made:
update-alternatives retargeting /usr/local/cuda, a distro toolkit package installed later, and a
second data dir sharing one cache dir. Each mirrors a step an admin or user takes between two
`cudaswitch list` runs."""

import json
import os

from tests import kits


def default_root(host, env=None):
    items = json.loads(host.run("list", "--json", env=env, check=True).stdout)
    return [item["root"] for item in items if item["default"]]


def test_update_alternatives_retargeting_the_system_default_is_seen(host):
    """NVIDIA's .deb toolkits: /usr/local/cuda -> /etc/alternatives/cuda -> /usr/local/cuda-13.x;
    `update-alternatives --set cuda` replaces only the middle link (by rename, as dpkg does)."""
    for minor in ("13.0", "13.1"):
        kits.install_classic(kits.cuda13(minor), host.path("/usr/local/cuda-" + minor), minor)
    host.path("/etc/alternatives").mkdir(parents=True)
    os.symlink("/usr/local/cuda-13.0", host.path("/etc/alternatives/cuda"))
    os.symlink("/etc/alternatives/cuda", host.path("/usr/local/cuda"))
    assert default_root(host) == [str(host.path("/usr/local/cuda-13.0"))]
    os.symlink("/usr/local/cuda-13.1", host.path("/etc/alternatives/cuda.dpkg-tmp"))
    os.rename(host.path("/etc/alternatives/cuda.dpkg-tmp"), host.path("/etc/alternatives/cuda"))
    assert default_root(host) == [str(host.path("/usr/local/cuda-13.1"))]


def test_distro_toolkit_installed_after_the_cache_is_listed(host):
    """`apt install nvidia-cuda-toolkit` adds /usr/lib/nvidia-cuda-toolkit and /usr/bin/nvcc, two
    places that held nothing when the cache was made."""
    assert host.list_json() == {}
    root = kits.install_classic(kits.cuda13("13.0"), host.path("/usr/lib/nvidia-cuda-toolkit"), "13.0")
    assert host.list_json()[str(root)]["status"] == "ok"


def test_another_data_dir_with_the_same_cache_dir_lists_its_own_managed_toolkits(host, tmp_path):
    other = tmp_path / "other-data"
    kits.install_classic(kits.cuda13("13.1"), other / "toolkits" / "13.1", "13.1")
    assert host.list_json() == {}
    listed = host.run("list", "--json", env={"CUDASWITCH_DATA_DIR": str(other)}, check=True).stdout
    assert [item["sources"] for item in json.loads(listed)] == [["managed"]]
