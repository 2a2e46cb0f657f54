"""The `system` source beyond /usr/local/cuda-*: /opt/cuda (Arch's package), /usr/lib/cuda with
/usr/bin/nvcc (Debian's nvidia-cuda-toolkit), the NVIDIA HPC SDK tree, $CUDA_HOME, and the older
version evidence: version.txt (CUDA <= 11.0) and the libcudart soname when nothing else is left."""

import json
import os
import shutil

from tests import kits


def lay_hosts(host):
    kits.install_classic(kits.cuda13("13.0"), host.path("/opt/cuda"), "13.0")
    kits.install_classic(kits.cuda13("13.0"), host.path("/usr/lib/cuda"), "13.0", version_json=False)
    hpc = host.path("/opt/nvidia/hpc_sdk/Linux_x86_64/25.9/cuda/13.1")
    kits.install_classic(kits.cuda13("13.1"), hpc, "13.1")
    kits.install_classic(kits.cuda13("13.1"), host.path("/srv/toolkits/cuda"), "13.1")
    return hpc


def by_root(host, *extra, env=None):
    proc = host.run("list", "--json", *extra, env=env, check=True)
    return {item["root"]: item for item in json.loads(proc.stdout)}


def test_opt_usr_lib_hpc_sdk_and_cuda_home_are_found(host):
    hpc = lay_hosts(host)
    found = by_root(host, env={"CUDA_HOME": "/srv/toolkits/cuda"})
    assert found[str(host.path("/opt/cuda"))]["short"] == "13.0"
    assert found[str(host.path("/usr/lib/cuda"))]["status"] == "ok"
    assert found[str(hpc)]["short"] == "13.1" and found[str(hpc)]["origins"]["system"] == "HPC SDK 25.9"
    home = found[str(host.path("/srv/toolkits/cuda"))]
    assert home["origins"]["system"] == "$CUDA_HOME" and home["short"] == "13.1"


def test_a_site_dir_of_versions_under_opt_cuda_lists_each_version_not_a_broken_parent(host):
    """A site's /opt/cuda/12.4 and /opt/cuda/13.1 (the shape `install --prefix /opt/cuda/12.4`
    makes): two toolkits, and /opt/cuda itself is no toolkit, so not a broken one either."""
    kits.install_classic(kits.cuda13("13.1"), host.path("/opt/cuda/13.1"), "13.1")
    kits.install_classic_runtime12(host.path("/opt/cuda/12.4"))
    (host.path("/opt/cuda/.cache")).mkdir()  # a dot dir or a file beside them is no version
    found = by_root(host)
    assert str(host.path("/opt/cuda")) not in found, found[str(host.path("/opt/cuda"))]
    assert found[str(host.path("/opt/cuda/13.1"))]["status"] == "ok"
    assert found[str(host.path("/opt/cuda/13.1"))]["origins"]["system"] == "/opt/cuda/13.1"
    assert found[str(host.path("/opt/cuda/12.4"))]["short"] == "12.4"


def test_an_empty_opt_cuda_is_still_reported_broken(host):
    """A stripped install (the dir left after `rm -rf /opt/cuda/*`) is said, not hidden."""
    host.path("/opt/cuda").mkdir(parents=True)
    assert by_root(host)[str(host.path("/opt/cuda"))]["status"] == "broken"


def test_version_txt_of_an_old_toolkit_is_read(host):
    """CUDA 10.2/11.0 installs carry version.txt ('CUDA Version 10.2.89') and no version.json;
    the version comes from that file, not from nvcc (here the runtime-only tree has none)."""
    root = kits.install_classic_runtime12(host.path("/usr/local/cuda-12.4"))
    os.unlink(root / "version.json")
    (root / "version.txt").write_text("CUDA Version 12.4.1\n")
    item = by_root(host)[str(root)]
    assert item["version"] == "12.4.1" and item["status"] == "incomplete"


def test_libcudart_soname_is_the_last_resort(host):
    """A runtime left behind with neither version file nor nvcc (a half-removed install): the
    real libcudart.so.12.4.127 file name still tells the version."""
    root = kits.install_classic_runtime12(host.path("/usr/local/cuda-12.4"))
    os.unlink(root / "version.json")
    shutil.rmtree(root / "bin")
    item = by_root(host)[str(root)]
    assert item["version"].startswith("12.4.") and item["status"] == "incomplete"
    assert item["components"]["cudart"] == item["version"]
