"""`cudaswitch audit --image` on images built by umoci and copied by skopeo (tests/image_support.py):
what an admin asks before a run — which toolkit and torch the image carries after its whiteouts,
and whether the NVIDIA container runtime will start it on a driver (its NVIDIA_REQUIRE_CUDA, judged
as libnvidia-container judges it, "cannot tell" where a fact such as the GPU brand is unknown)."""

import json
import os
import threading
import time

import pytest

from tests import image_support as images
from tests.test_json_schemas import validate
from tests.verify_support import build_libcuda

CUDA_ROOT = "/usr/local/cuda-12.4"
SPLIT_ROOT = "/" + images.SITE + "/nvidia"


@pytest.fixture(scope="module")
def built():
    return images.cuda_image()


def audit(host, ref, *args, env=None):
    return host.run("audit", "--image", ref, "--no-progress", *args, env=env, timeout=120)


def audit_json(host, ref, *args, codes=(0,), env=None):
    proc = audit(host, ref, "--json", *args, env=env)
    assert proc.returncode in codes, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("transport", ["oci", "oci-archive", "docker-archive"])
def test_the_final_filesystem_of_each_transport(host, built, transport):
    """Layer 2's .wh.nvcc leaves the 12.4 toolkit without nvcc; layer 3's opaque nvidia/ hides the
    12.1 wheel; torch is the upgraded one. The same in the layout and in skopeo's archives."""
    report = audit_json(host, images.references(built)[transport], "--driver", "550.54.15")
    validate(report, "audit")
    [toolkit] = report["toolkits"]
    assert (toolkit["root"], toolkit["version"], toolkit["status"], toolkit["nvcc"]) == (
        CUDA_ROOT, "12.4.131", "incomplete", None)
    assert any("no nvcc" in p for p in toolkit["problems"]), toolkit["problems"]
    assert toolkit["components"]["cudart"] == "12.4.127" and toolkit["system_default"] is True
    assert toolkit["size_bytes"] > 30 << 20  # the image's sizes, not the view's placeholders
    image = report["image"]
    assert image["layers"] == 3 and image["architecture"] == "amd64" and image["os"] == "linux"
    assert image["env"] == images.ENV
    assert image["os_release"]["ID"] == "ubuntu"
    [torch] = image["torch"]
    assert (torch["version"], torch["cuda"], torch["site"]) == ("2.6.0+cu124", "12.4", "/" + images.SITE)
    assert "sm_90" in torch["arch"] and "sm_120" not in torch["arch"]
    assert image["requirement"]["verdict"] == "ok" and image["runs"] is True
    assert report["driver"]["release"] == "550.54.15" and report["host"] == images.references(built)[transport]
    assert not any(built.as_posix() in json.dumps(t) for t in report["toolkits"])  # no view path left


def test_before_the_whiteouts(host, built):
    """The `base` tag is layer 1 alone: nvcc there (its version read from the binary's banner), the
    12.1 split wheel there, the old torch."""
    report = audit_json(host, "oci:%s:base" % (built / "layout"), "--driver", "550.54.15")
    by_root = {t["root"]: t for t in report["toolkits"]}
    assert by_root[CUDA_ROOT]["status"] == "ok" and by_root[CUDA_ROOT]["components"]["nvcc"] == "12.4.131"
    assert by_root[SPLIT_ROOT]["version"] == "12.1.105"
    assert [t["version"] for t in report["image"]["torch"]] == ["2.5.1+cu121"]


def test_requirement_on_three_drivers(host, built):
    """cuda>=12.4 OR (brand=tesla AND 535 <= driver < 536): 550 meets the first; 525 meets neither
    (exit 1, both unmet terms named); 535.183.01 meets the driver terms, but whether the GPU is a
    Tesla needs NVML: cannot tell, exit 0 with an info line."""
    ref = images.references(built)["oci"]
    ok = audit(host, ref, "--driver", "550.54.15")
    assert ok.returncode == 0 and "ok: driver 550.54.15 (CUDA 12.4) meets" in ok.stdout, ok.stdout + ok.stderr
    old = audit(host, ref, "--driver", "525.60.13")
    assert old.returncode == 1, old.stderr
    [line] = [l for l in old.stdout.splitlines() if l.startswith("error: cannot start")]
    assert "cuda>=12.4 (the driver supports CUDA 12.0)" in line and "driver>=535 (the driver is 525.60.13)" in line
    assert "550.54.14" in line  # compat.toml's minimum for CUDA 12.4
    unsure = audit(host, ref, "--driver", "535.183.01")
    assert unsure.returncode == 0, unsure.stderr
    assert "info: cannot tell whether it starts on driver 535.183.01" in unsure.stdout
    assert "brand=tesla" in unsure.stdout


@pytest.mark.parametrize("driver,verdict,code", [("550.54.15", "ok", 0), ("535.54", "cannot run", 1),
                                                 ("470.82.01", "cannot tell", 0), ("12.4", "ok", 0),
                                                 ("12.2", "cannot tell", 0)])
def test_nvidia_base_image_requirement(host, tmp_path, driver, verdict, code):
    """The condition nvidia/cuda:12.4 images carry, with its two branch alternatives. `--driver 12.2`
    gives only a CUDA version: the release terms cannot be told."""
    require = "cuda>=12.4 brand=tesla,driver>=470,driver<471 brand=unknown,driver>=470,driver<471"
    ref = images.write_layout(tmp_path / "img", [images.layer_tar([("etc/os-release", b"ID=ubuntu\n", 0o644)])],
                              env={"NVIDIA_REQUIRE_CUDA": require, "CUDA_VERSION": "12.4.1"})
    report = audit_json(host, ref, "--driver", driver, codes=(code,))
    assert report["image"]["requirement"]["verdict"] == verdict


@pytest.mark.parametrize("env,verdict", [
    ({"CUDA_VERSION": "12.4.1"}, "cannot run"),  # no NVIDIA_REQUIRE_CUDA: the runtime requires cuda>=12.4
    ({"NVIDIA_REQUIRE_CUDA": "cuda>=12.4", "NVIDIA_DISABLE_REQUIRE": "true"}, "not checked"),
    ({"NVIDIA_REQUIRE_CUDA": "cuda>=12.4", "NVIDIA_REQUIRE_ARCH": "arch>=9.0"}, "cannot run"),
    ({"NVIDIA_REQUIRE_CUDA": "cuda~12.4"}, "cannot run"),  # the runtime refuses an invalid expression
    ({}, "ok"),
])
def test_what_the_runtime_checks(host, tmp_path, env, verdict):
    ref = images.write_layout(tmp_path / "img", [images.layer_tar([("etc/hostname", b"x\n", 0o644)])], env=env)
    report = audit_json(host, ref, "--driver", "535.183.01", "--gpu", "sm_90", codes=(0, 1))
    assert report["image"]["requirement"]["verdict"] == verdict, report["image"]["requirement"]
    assert report["image"]["runs"] is not False or verdict == "cannot run"


def test_this_hosts_driver_and_gpu(host, built, tmp_path):
    """Without --driver the host's driver is asked (a libcuda stand-in for CUDA 12.2 with an
    sm_120 GPU): cuda>=12.4 is unmet, the driver release is unknown, and the image's torch has no
    sm_120 code: it cannot run here (exit 1)."""
    libcuda = build_libcuda(tmp_path / "lib", 12020, init_rc=0, gpus=["sm_120"])
    proc = audit(host, images.references(built)["oci"], env={"CUDASWITCH_LIBCUDA": str(libcuda)})
    assert proc.returncode == 1, proc.stderr
    assert "sm_120" in proc.stdout and "not in torch" in proc.stdout, proc.stdout


def test_bad_options_are_one_line(host, built):
    ref = images.references(built)["oci"]
    for args in (["--root", "/"], ["--exec"], ["--driver", "banana"], ["--gpu", "sm_x"]):
        proc = audit(host, ref, *args)
        assert proc.returncode == 2 and proc.stdout == "" and len(proc.stderr.splitlines()) == 1, (args, proc.stderr)
    for ref in ("docker:busybox", "oci:", "oci:%s:nope" % (built / "layout")):
        proc = audit(host, ref)
        assert proc.returncode in (1, 2) and proc.stdout == "" and len(proc.stderr.splitlines()) == 1, proc.stderr


def _big_layer(path, size):
    """An uncompressed layer holding a `size`-byte libcublasLt, written sparse (the disk holds none of it)."""
    import tarfile

    header = tarfile.TarInfo("usr/local/cuda-12.4/lib64/libcublasLt.so.12.4.5.8")
    header.size, header.mode = size, 0o755
    version = tarfile.TarInfo("usr/local/cuda-12.4/version.json")
    body = b'{"cuda": {"name": "CUDA SDK", "version": "12.4.1"}}'
    version.size = len(body)
    with open(path, "wb") as handle:
        handle.write(version.tobuf(format=tarfile.PAX_FORMAT) + body + b"\0" * (512 - len(body)))
        handle.write(header.tobuf(format=tarfile.PAX_FORMAT))
        handle.seek(size, os.SEEK_CUR)
        handle.write(b"\0" * 1024)  # end of archive


def test_a_2_gib_image_needs_little_temporary_disk(host, tmp_path):
    """The view holds what the audit reads: a 2 GiB library is an empty placeholder there. The
    temporary dir is watched while the audit runs, and is empty after it."""
    import hashlib

    layer = tmp_path / "big.tar"
    _big_layer(layer, 2 << 30)
    digest = hashlib.sha256()
    with open(layer, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 22), b""):
            digest.update(chunk)
    blob = images.write_layout(tmp_path / "img", [b"placeholder"])
    store = tmp_path / "img/blobs/sha256"
    old = images.sha256(b"placeholder")
    size = layer.stat().st_size
    os.replace(layer, store / digest.hexdigest())
    _repoint(tmp_path / "img", old, "sha256:" + digest.hexdigest(), size)
    temp = tmp_path / "tmp"
    temp.mkdir()
    peak = []
    done = threading.Event()
    threading.Thread(target=_watch, args=(temp, peak, done), daemon=True).start()
    report = audit_json(host, blob, "--driver", "550.54.15", env={"TMPDIR": str(temp)})
    done.set()
    [toolkit] = report["toolkits"]
    assert toolkit["size_bytes"] >= 2 << 30 and report["image"]["view"]["bytes"] < 1 << 20
    assert max(peak or [0]) < 200 << 20 and list(temp.iterdir()) == []


def _watch(directory, peak, done):
    while not done.is_set():
        total = 0
        for base, _dirs, files in os.walk(directory):
            for name in files:
                try:
                    total += os.lstat(os.path.join(base, name)).st_blocks * 512
                except OSError:
                    pass
        peak.append(total)
        time.sleep(0.05)


def _repoint(layout, old, new, size):
    """Point the manifest's one layer (and the config's diff_id) at another blob."""
    blobs = layout / "blobs/sha256"
    index = json.loads((layout / "index.json").read_text())
    manifest_path = blobs / index["manifests"][0]["digest"].split(":")[1]
    manifest = json.loads(manifest_path.read_text())
    config_path = blobs / manifest["config"]["digest"].split(":")[1]
    config = json.loads(config_path.read_text())
    config["rootfs"]["diff_ids"] = [new]
    config_bytes = json.dumps(config).encode()
    (blobs / images.sha256(config_bytes).split(":")[1]).write_bytes(config_bytes)
    manifest["config"].update(digest=images.sha256(config_bytes), size=len(config_bytes))
    manifest["layers"][0].update(digest=new, size=size)
    manifest_bytes = json.dumps(manifest).encode()
    (blobs / images.sha256(manifest_bytes).split(":")[1]).write_bytes(manifest_bytes)
    index["manifests"][0].update(digest=images.sha256(manifest_bytes), size=len(manifest_bytes))
    (layout / "index.json").write_text(json.dumps(index))
    assert old != new
