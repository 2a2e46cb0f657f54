"""Jupyter: `cudaswitch kernel install 13.0` writes a kernelspec; the real jupyter_client
KernelManager starts it (the real ipykernel), and code in the notebook sees the switched toolkit:
CUDA_HOME, the first nvcc on PATH and what that nvcc says. The user's PATH holds CUDA 13.1 (an rc
file export) and an entry with a literal `$`, which jupyter_client's $-templating must not eat."""

import json
import shutil
import sys

import pytest

from tests import kits

ODD_ENTRY = "/opt/odd$HOME/bin"
PROBE = ("import json, os, shutil, subprocess; nvcc = shutil.which('nvcc'); "
         "out = subprocess.run([nvcc, '--version'], capture_output=True, text=True).stdout if nvcc else ''; "
         "print(json.dumps({'CUDA_HOME': os.environ.get('CUDA_HOME'), 'nvcc': nvcc, 'PATH': os.environ['PATH'], "
         "'release': [l for l in out.splitlines() if 'release' in l]}))")


@pytest.fixture
def kernel_host(tmp_path, monkeypatch):
    from tests.conftest import Host

    host = Host(tmp_path / "root", tmp_path / "work")
    for minor in ("13.0", "13.1"):
        kits.install_classic(kits.cuda13(minor), host.path("/usr/local/cuda-%s" % minor), minor)
    host.env["PATH"] = "%s:%s:%s" % (host.path("/usr/local/cuda-13.1/bin"), ODD_ENTRY, host.env["PATH"])
    host.env["JUPYTER_DATA_DIR"] = str(tmp_path / "jupyter")
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "jupyter"))  # where this process's Jupyter looks
    return host


def run_in_kernel(name, code):
    import jupyter_client  # in the test extra: a real KernelManager, a real ipykernel
    manager = jupyter_client.KernelManager(kernel_name=name)
    manager.start_kernel()
    client = manager.client()
    client.start_channels()
    printed = []
    try:
        client.wait_for_ready(timeout=180)
        reply = client.execute_interactive(code, timeout=180, output_hook=lambda msg: printed.append(
            msg["content"].get("text", "")) if msg["msg_type"] == "stream" else None)
        assert reply["content"]["status"] == "ok", reply["content"]
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    return json.loads("".join(printed))


def test_kernel_runs_with_the_switched_toolkit(kernel_host):
    proc = kernel_host.run("kernel", "install", "13.0", "--python", sys.executable, check=True)
    spec_path = proc.stdout.strip()
    assert spec_path.endswith("/kernels/cuda-13.0/kernel.json") and "cudaswitch: " in proc.stderr
    root = str(kernel_host.path("/usr/local/cuda-13.0"))
    seen = run_in_kernel("cuda-13.0", PROBE)
    assert seen["CUDA_HOME"] == root
    assert seen["nvcc"] == root + "/bin/nvcc"
    assert seen["release"] and "release 13.0" in seen["release"][0]
    assert ODD_ENTRY in seen["PATH"].split(":")  # a literal $ survives jupyter_client's templating


WHICH = ("import json, shutil, sys; print(json.dumps({'pip': shutil.which('pip'), 'python3': shutil.which('python3'), "
         "'nvcc': shutil.which('nvcc'), 'executable': sys.executable}))")


def test_a_venv_kernel_finds_its_own_pip_first(kernel_host, tmp_path):
    """A user installs a kernel for their venv (never activated in the shell that ran `kernel
    install`): kernel.json froze that shell's PATH, so `!pip install` in the notebook was another
    Python's pip and `!python3` /usr/bin's. The real kernel now finds the venv's pip and python3
    first, and the switched toolkit's nvcc still first."""
    import subprocess

    venv = tmp_path / "venv"  # with pip (ensurepip), and ipykernel from the Python it was made from
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, timeout=300)
    assert shutil.which("pip", path=kernel_host.env["PATH"]) != str(venv / "bin" / "pip")
    kernel_host.run("kernel", "install", "13.0", "--python", str(venv / "bin" / "python"), "--name", "venv",
                    check=True)
    seen = run_in_kernel("venv", WHICH)
    assert seen["pip"] == str(venv / "bin" / "pip") and seen["python3"] == str(venv / "bin" / "python3")
    assert seen["nvcc"] == str(kernel_host.path("/usr/local/cuda-13.0")) + "/bin/nvcc"


def test_a_kernel_python_beside_its_own_nvcc_leaves_the_switched_nvcc_first(tmp_path):
    """A conda env's bin holds python and cuda-nvcc's nvcc: its dir goes right after the switched
    toolkit's, not before it."""
    from cudaswitch.integrations.kernels import kernel_path

    env_bin, toolkit_bin = tmp_path / "env" / "bin", tmp_path / "cuda" / "bin"
    for directory in (env_bin, toolkit_bin):
        directory.mkdir(parents=True)
        (directory / "nvcc").write_text("#!/bin/sh\n")
        (directory / "nvcc").chmod(0o755)
    path = kernel_path("%s:/usr/bin:%s" % (toolkit_bin, env_bin), str(env_bin / "python"))
    assert path == "%s:%s:/usr/bin" % (toolkit_bin, env_bin)
    assert kernel_path("/a:/usr/bin", "/opt/venv/bin/python") == "/opt/venv/bin:/a:/usr/bin"


def test_kernel_list_and_remove(kernel_host):
    kernel_host.run("kernel", "install", "13.1", "--python", sys.executable, "--name", "my-cuda", check=True)
    [item] = json.loads(kernel_host.run("kernel", "list", "--json", check=True).stdout)
    assert item["name"] == "my-cuda" and item["version"].startswith("13.1") and item["python"] == sys.executable
    assert "my-cuda" in kernel_host.run("kernel", "list", check=True).stdout
    removed = kernel_host.run("kernel", "remove", "my-cuda", check=True)
    assert "removed" in removed.stderr
    assert json.loads(kernel_host.run("kernel", "list", "--json", check=True).stdout) == []


def test_default_python_is_python3_on_the_switched_path(kernel_host):
    import shutil

    kernel_host.run("kernel", "install", "13.0", check=True)
    [item] = json.loads(kernel_host.run("kernel", "list", "--json", check=True).stdout)
    assert item["name"] == "cuda-13.0" and item["python"] == shutil.which("python3", path=kernel_host.env["PATH"])


def test_unwritable_kernel_dir_is_one_line(kernel_host, tmp_path):
    blocker = tmp_path / "blocked"
    blocker.write_text("a file where the data dir should be")
    proc = kernel_host.run("kernel", "install", "13.0", "--python", sys.executable,
                           env={"JUPYTER_DATA_DIR": str(blocker / "jupyter")})
    assert proc.returncode == 1 and proc.stdout == "" and proc.stderr.count("\n") == 1
    assert "cannot write" in proc.stderr and "Traceback" not in proc.stderr


def test_a_kernel_cudaswitch_did_not_write_is_left_alone(kernel_host, tmp_path):
    """A user's own kernelspec of the same name: never overwritten, never removed."""
    theirs = tmp_path / "jupyter" / "kernels" / "cuda-13.0" / "kernel.json"
    theirs.parent.mkdir(parents=True)
    theirs.write_text('{"argv": ["python3"], "display_name": "mine", "language": "python"}')
    before = theirs.read_text()
    for args in (["kernel", "install", "13.0", "--python", sys.executable], ["kernel", "remove", "cuda-13.0"]):
        proc = kernel_host.run(*args)
        assert proc.returncode == 1 and "not installed by cudaswitch" in proc.stderr and proc.stdout == ""
    assert theirs.read_text() == before


@pytest.mark.parametrize("args,message", [
    (["kernel", "install", "12.9"], "12.9"),
    (["kernel", "install", "13.0", "--name", "../evil"], "kernel name"),
    (["kernel", "install", "13.0", "--python", "/nonexistent/python"], "no such executable"),
    (["kernel", "install", "13.0", "--python", "/bin/true"], None),
    (["kernel", "remove", "nothing-here"], "no kernel named"),
])
def test_bad_input_writes_nothing(kernel_host, tmp_path, args, message):
    proc = kernel_host.run(*args)
    assert proc.returncode != 0 and proc.stdout == "" and len(proc.stderr.strip().splitlines()) == 1
    assert message is None or message in proc.stderr
    assert not (tmp_path / "jupyter" / "kernels").exists() or not any((tmp_path / "jupyter" / "kernels").iterdir())
