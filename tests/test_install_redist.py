"""`cudaswitch install` from NVIDIA's redistributable archives, served by a local HTTP mirror in
NVIDIA's exact scheme (tests/redist_mirror.py: CUDA 13.1.2 and 12.4.1 from the real wheel files,
cuDNN 9.24.0.43 for CUDA 13). No test here talks to NVIDIA's host.

What a user checks: the toolkit is listed ok, nvcc builds and links a kernel, `use` switches bash to
it, cuDNN lands beside it with the version audit reads; a corrupt archive, a mirror that is down and
an interrupted install leave nothing behind, and a retry works."""

import json
import os
import shutil
import signal
import subprocess

import pytest

from tests import kits, redist_mirror
from tests.conftest import CUDASWITCH, Host
from tests.install_support import drop_installed_trees, managed_items, toolkits_dir  # noqa: F401 (autouse fixture)
from tests.test_install import KERNEL
from tests.test_install_atomic import PAUSED, read_until
from tests.verify_support import build_libcuda

CU13_ARCHIVES = {"cuda_nvcc": "13.1.115", "cuda_cudart": "13.1.80", "cuda_crt": "13.1.115",
                 "libnvvm": "13.1.115", "cuda_cccl": "13.1.115"}


@pytest.fixture(scope="module")
def mirror_root():
    return redist_mirror.mirror()


@pytest.fixture(scope="module")
def mirror(mirror_root):
    served = redist_mirror.Mirror(mirror_root)
    yield served
    served.close()


def new_host(base):
    (base / "root").mkdir(parents=True)
    return Host(base / "root", base / "work")


@pytest.fixture(scope="module")
def installed(tmp_path_factory, mirror):
    host = new_host(tmp_path_factory.mktemp("redist13"))
    proc = host.run("install", "13.1", "--mirror", mirror.url, "--json", timeout=900)
    yield host, proc
    shutil.rmtree(host.work / "data", ignore_errors=True)


def leftovers(host):
    """What the managed dir holds besides lock files (a failed install must leave nothing)."""
    base = toolkits_dir(host)
    return sorted(e for e in os.listdir(base) if not e.startswith(".lock-")) if base.is_dir() else []


def error_line(proc, alone=False):
    """The one error line a failed install ends with (after its progress lines, unless `alone`)."""
    lines = proc.stderr.splitlines()
    assert proc.returncode != 0 and proc.stdout == "", proc.stderr
    errors = [line for line in lines if line.startswith("cudaswitch: error: ")]
    assert errors == lines[-1:] and (len(lines) == 1 or not alone), proc.stderr
    assert "Traceback" not in proc.stderr
    return lines[-1]


def test_install_from_http_mirror_is_listed_ok_with_the_manifest_versions(installed):
    host, proc = installed
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["version"] == "13.1.2" and result["source"] == "redist"
    assert result["name"] == "13.1.2 (nvcc 13.1.115)"
    assert "installed CUDA 13.1.2 (nvcc 13.1.115) at %s (" % result["root"] in proc.stderr
    assert " MiB, " in proc.stderr  # IEC units
    assert "first compile: building a one-kernel program" in proc.stderr
    [item] = managed_items(host)
    assert (item["status"], item["sources"], item["problems"]) == ("ok", ["managed"], [])
    assert item["root"] == result["root"] == str(toolkits_dir(host) / "13.1.2")
    document = json.loads((toolkits_dir(host) / "13.1.2" / "version.json").read_text())
    assert document["cuda"]["version"] == "13.1.2"
    assert {k: document[k]["version"] for k in CU13_ARCHIVES} == CU13_ARCHIVES
    said = subprocess.run([result["nvcc"], "--version"], capture_output=True, text=True, timeout=60).stdout
    assert "release 13.1, V13.1.115" in said
    assert leftovers(host) == ["13.1.2"]


def test_kernel_builds_and_links_against_the_installed_cudart(installed, tmp_path):
    kits.require("gcc")
    host, proc = installed
    nvcc = json.loads(proc.stdout)["nvcc"]
    (tmp_path / "k.cu").write_text(KERNEL)
    for argv in ([nvcc, "-c", "k.cu", "-o", "k.o"], [nvcc, "k.o", "-o", "k", "-cudart", "shared"]):
        built = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert built.returncode == 0, built.stderr
    needed = subprocess.run(["ldd", str(tmp_path / "k")], capture_output=True, text=True, timeout=60,
                            env={"LD_LIBRARY_PATH": os.path.dirname(os.path.dirname(nvcc)) + "/lib64"}).stdout
    assert "libcudart.so.13 => %s/lib64/libcudart.so.13" % os.path.dirname(os.path.dirname(nvcc)) in needed


def test_use_switches_bash_to_it(installed, tmp_path):
    bash = kits.require("bash")
    host, proc = installed
    root = json.loads(proc.stdout)["root"]
    (tmp_path / "k.cu").write_text(KERNEL)
    script = 'eval "$(cudaswitch use managed:13.1 --shell bash)" && command -v nvcc && nvcc -c k.cu -o k.o ' \
             '&& echo "CUDA_HOME=$CUDA_HOME"'
    env = dict(host.env, PATH="/usr/bin:/bin:" + os.path.dirname(CUDASWITCH))
    out = subprocess.run([bash, "--noprofile", "--norc", "-c", script], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == root + "/bin/nvcc" and "CUDA_HOME=" + root in out.stdout


def test_with_cudnn_adds_the_cuda13_build_and_audit_reports_it(tmp_path):
    served = redist_mirror.Mirror(redist_mirror.mirror_with_cudnn(tmp_path / "mirror"))
    try:
        host = new_host(tmp_path)
        proc = host.run("install", "13.1", "--mirror", served.url, "--with", "cudnn", "--json", timeout=900)
    finally:
        served.close()
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["archives"]["cudnn"] == "9.24.0.43"
    assert "cudnn-linux-x86_64-9.24.0.43_cuda13-archive.tar.xz" in proc.stderr
    root = result["root"]
    assert os.path.isfile(root + "/include/cudnn_version.h")
    assert os.readlink(root + "/lib64/libcudnn.so.9") == "libcudnn.so.9.24.0"
    audit = json.loads(host.run("audit", "--json", check=True, timeout=300).stdout)
    [toolkit] = [t for t in audit["toolkits"] if t["root"] == root]
    assert toolkit["components"]["cudnn"] == "9.24.0", toolkit["components"]


def test_flipped_byte_is_refused_naming_the_archive_and_installs_nothing(tmp_path, mirror_root):
    copy = tmp_path / "mirror"
    shutil.copytree(mirror_root, copy, copy_function=os.link)
    archive = copy / "compute/cuda/redist/cuda_cccl/linux-x86_64/cuda_cccl-linux-x86_64-13.1.115-archive.tar.xz"
    kits.detach(archive)
    data = bytearray(archive.read_bytes())
    data[len(data) // 2] ^= 0x01  # same size: only the checksum can tell
    archive.write_bytes(bytes(data))
    served = redist_mirror.Mirror(copy)
    try:
        host = new_host(tmp_path / "h")
        line = error_line(host.run("install", "13.1", "--mirror", served.url, timeout=900))
    finally:
        served.close()
    assert "cuda_cccl-linux-x86_64-13.1.115-archive.tar.xz fails its sha256 check" in line
    assert "nothing was installed" in line
    assert leftovers(host) == [] and managed_items(host) == []


def test_mirror_down_is_one_line_naming_from_pypi_and_writes_nothing(host, mirror_root):
    down = redist_mirror.Mirror(mirror_root)
    url = down.url
    down.close()  # the port is now closed: connection refused, as for a host that is down
    line = error_line(host.run("install", "12.4", "--mirror", url, timeout=300), alone=True)
    assert "cannot reach %s" % url in line and "--from pypi" in line
    assert not (host.work / "data").exists()


def start(host, *args, env=None):
    return subprocess.Popen([CUDASWITCH, "install", *args], env={**host.env, **(env or {})},
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def build_dir(host):
    [build] = [e for e in os.listdir(toolkits_dir(host)) if e.startswith(".tmp-")]
    return toolkits_dir(host) / build


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_mid_download_leaves_nothing_and_retry_works(tmp_path, mirror_root, signum):
    served = redist_mirror.Mirror(mirror_root)
    served.server.stall.add("libnvvm-linux-x86_64-13.1.115-archive.tar.xz")
    try:
        host = new_host(tmp_path)
        proc = start(host, "13.1", "--mirror", served.url)
        read_until(proc, "downloading libnvvm-linux-x86_64-13.1.115-archive.tar.xz")
        assert served.server.stalled.wait(300), "the install never started the stalled download"
        partial = build_dir(host) / "archives" / "libnvvm-linux-x86_64-13.1.115-archive.tar.xz"
        assert partial.exists()  # midway: part of the archive is on disk
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 130, err
        assert "interrupted; nothing was installed" in err
        assert leftovers(host) == [] and managed_items(host) == []
        served.server.stall.clear()
        again = host.run("install", "13.1", "--mirror", served.url, timeout=900)
    finally:
        served.close()
    assert again.returncode == 0, again.stderr
    [item] = managed_items(host)
    assert item["status"] == "ok" and leftovers(host) == ["13.1.2"]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_mid_unpack_leaves_nothing_and_retry_works(tmp_path, mirror_root, signum):
    host = new_host(tmp_path)
    url = (mirror_root / "compute/cuda/redist").as_uri()  # file:// as an air-gapped site mounts it
    proc = start(host, "13.1", "--mirror", url, env={"CUDASWITCH_TEST_PAUSE_UNPACK": "120"})
    read_until(proc, PAUSED)
    unpacked = build_dir(host) / "unpacked"  # each archive is unpacked in its own dir, then merged
    assert any(files for _, _, files in os.walk(unpacked))  # midway: files are unpacked
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "interrupted; nothing was installed" in err
    assert leftovers(host) == [] and managed_items(host) == []
    again = host.run("install", "13.1", "--mirror", url, timeout=900)
    assert again.returncode == 0, again.stderr
    [item] = managed_items(host)
    assert item["status"] == "ok"


def test_older_release_whose_archives_lack_nvcc_is_refused_not_installed_incomplete(host, mirror_root):
    """12.4.1 here is built from NVIDIA's CUDA 12 wheels, whose nvcc component holds ptxas but no
    nvcc: the install must say so and install nothing, never leave an `incomplete` toolkit. The
    mirror comes from config redist_url as a plain directory."""
    (host.work / "config").mkdir(parents=True)
    (host.work / "config" / "config.toml").write_text('redist_url = "%s"\n' % (mirror_root / "compute/cuda/redist"))
    line = error_line(host.run("install", "12.4", timeout=900))
    assert "the cuda_nvcc archive of CUDA 12.4.1 holds no bin/nvcc" in line and "nothing was installed" in line
    assert leftovers(host) == [] and managed_items(host) == []


def test_list_json_gives_component_versions_and_driver_fit_and_answers_offline(tmp_path, mirror_root):
    host = new_host(tmp_path)
    driver = {"CUDASWITCH_LIBCUDA": str(build_libcuda(tmp_path / "libcuda", 12080))}  # a driver for CUDA 12.8
    served = redist_mirror.Mirror(mirror_root)
    url = served.url
    try:
        live = host.run("install", "--list", "--json", "--mirror", url, env=driver, check=True, timeout=300)
        table = host.run("install", "--list", "--mirror", url, env=driver, check=True, timeout=300)
    finally:
        served.close()
    result = json.loads(live.stdout)
    assert result["offline"] is False and result["base"] == url
    rows = {r["release"]: r for r in result["releases"]}
    assert list(rows) == ["13.1.2", "12.4.1"]
    assert rows["12.4.1"]["components"]["cuda_nvcc"] == "12.4.131"
    assert rows["12.4.1"]["name"] == "12.4.1 (nvcc 12.4.131)"
    assert rows["13.1.2"]["components"] == dict(CU13_ARCHIVES)
    assert rows["12.4.1"]["driver_level"] == "ok" and rows["13.1.2"]["driver_level"] == "error"
    assert "needs a newer driver (590.44.01)" in rows["13.1.2"]["driver"]
    assert rows["13.1.2"]["size"].endswith("MiB")
    assert "13.1.2" in table.stdout and "12.4.131" in table.stdout
    offline = host.run("install", "--list", "--json", "--mirror", url, env=driver, check=True, timeout=300)
    again = json.loads(offline.stdout)
    assert again["offline"] is True and again["cached_at"]
    assert again["releases"] == result["releases"]


def test_mirror_with_from_pypi_is_a_usage_error(host):
    line = error_line(host.run("install", "13.1", "--from", "pypi", "--mirror", "http://127.0.0.1:9/"), alone=True)
    assert "--mirror names a redist mirror" in line


@pytest.mark.parametrize("request_text, source, mirror, chosen", [
    ("12.4", None, None, "https://developer.download.nvidia.com/compute/cuda/redist/"),  # wheels lack nvcc
    ("11.8", None, None, "https://developer.download.nvidia.com/compute/cuda/redist/"),
    (">=12.1,<13", None, None, "https://developer.download.nvidia.com/compute/cuda/redist/"),
    ("13.1", None, None, "pypi"),  # the wheels are complete from 13.0 on
    ("latest", None, None, "pypi"),
    ("13.1", "redist", None, "https://developer.download.nvidia.com/compute/cuda/redist/"),
    ("12.4", "pypi", None, "pypi"),  # asked for: the incomplete 12.x wheels, with their note
    ("13.1", None, "http://mirror.site/cuda/redist", "http://mirror.site/cuda/redist/"),
])
def test_source_choice_never_picks_wheels_without_nvcc_unasked(tmp_path, request_text, source, mirror, chosen):
    """Which source `install` reads, decided without any network (no test talks to NVIDIA's host)."""
    from cudaswitch.paths import Paths
    from cudaswitch.install.redist_install import choose_source

    paths = Paths({"CUDASWITCH_CONFIG_DIR": str(tmp_path / "config"), "CUDASWITCH_ROOT": str(tmp_path)})
    assert choose_source(paths, request_text, source, mirror) == chosen


def test_config_redist_url_is_the_default_mirror(tmp_path):
    from cudaswitch.paths import Paths
    from cudaswitch.install.redist_install import choose_source

    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.toml").write_text('redist_url = "file:///srv/mirror/cuda/redist"\n')
    paths = Paths({"CUDASWITCH_CONFIG_DIR": str(tmp_path / "config")})
    assert choose_source(paths, "13.1", None, None) == "file:///srv/mirror/cuda/redist/"


def test_unknown_component_is_one_line_listing_the_manifests_and_installs_nothing(host, mirror):
    line = error_line(host.run("install", "13.1", "--mirror", mirror.url, "--components", "cublas"), alone=True)
    assert ("CUDA 13.1.2 has no component cublas "
            "(components: cuda_cccl, cuda_crt, cuda_cudart, cuda_nvcc, libnvvm)") in line
    assert leftovers(host) == []


def test_release_not_on_the_mirror_names_what_is_there(host, mirror):
    line = error_line(host.run("install", "12.8", "--mirror", mirror.url), alone=True)
    assert "no CUDA release matches '12.8' at %s (releases there: 12.4, 13.1)" % mirror.url in line
    assert leftovers(host) == []


def test_with_cudnn_refuses_the_wheel_source_in_one_line(host):
    """cuDNN, site prefixes and modulefiles come only with the redist source; asking for them with
    --from pypi is refused before anything is fetched."""
    line = error_line(host.run("install", "13.1", "--from", "pypi", "--with", "cudnn"), alone=True)
    assert "--with, --prefix and --modulefile need the redist source" in line
    assert not (host.work / "data").exists()


def test_manifest_pointing_outside_the_mirror_is_refused(tmp_path, mirror_root):
    """A tampered manifest whose relative_path climbs out of the mirror (../) is refused before any
    download; mirrors a compromised site mirror."""
    copy = tmp_path / "mirror"
    shutil.copytree(mirror_root / "compute/cuda/redist", copy, copy_function=os.link)
    manifest = copy / "redistrib_13.1.2.json"
    kits.detach(manifest)
    data = json.loads(manifest.read_text())
    data["cuda_cccl"]["linux-x86_64"]["relative_path"] = "../../../etc/passwd"
    manifest.write_text(json.dumps(data))
    host = new_host(tmp_path / "h")
    line = error_line(host.run("install", "13.1", "--mirror", copy.as_uri()), alone=True)
    assert "relative_path '../../../etc/passwd' leaves the mirror" in line
    assert leftovers(host) == []
