"""One check, one answer: on the same hand-made host state, `explain`, `doctor`, `verify` and `audit`
give the same level and message for every check they share (a check is one registered function, so
they cannot disagree), and each shows only checks the registry gives it.

The states mirror what users bring: a host with no toolkit; CUDA_HOME unset with /usr/local/bin/nvcc
a wrapper script (torch would take CUDA_HOME=/usr/local); a toolkit's compat/ libcuda on
LD_LIBRARY_PATH with an older driver and a consumer GPU (error 804); and a toolkit's older
libnvJitLink shadowing the one torch's wheels ship. Each state is judged in the shell as it is, and
(where it has a toolkit) once more in the shell `use` gives, which is the one verify judges."""

import json
import os
import shutil
from itertools import combinations

from tests import kits
from tests.conftest import SCRIPTS
from tests.verify_support import build_libcuda, write_proc_version

from cudaswitch.audit import imageaudit, imagecheck, inventory  # noqa: F401  (they register audit's checks)
from cudaswitch.verify import checkregistry, checkset  # noqa: F401  (checkset fills the registry)

CUDA_HOME_UNSET = "OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA install root."
DRIVER_TOO_OLD = "RuntimeError: CUDA driver version is insufficient for CUDA runtime version"
ERROR_804 = "RuntimeError: CUDA error: forward compatibility was attempted on non supported HW"
NVJITLINK = ("ImportError: /venv/lib/python3.11/site-packages/nvidia/cusparse/lib/libcusparse.so.12: undefined "
             "symbol: __nvJitLinkAddData_12_4, version libnvJitLink.so.12")
BASE_PATH = SCRIPTS + ":/usr/bin:/bin"


def run_json(host, *args, env):
    proc = host.run(*args, "--json", env=env, timeout=300)
    assert proc.stdout.strip(), (args, proc.stderr)
    return json.loads(proc.stdout)


def outputs(host, env, text, toolkit=None, python=None):
    """{command: its checks} for explain (of `text`), doctor, audit and, with a toolkit, verify."""
    extra = ("--python", python) if python else ()
    got = {"explain": [c for m in run_json(host, "explain", text, *extra, env=env)["matches"] for c in m["checks"]],
           "doctor": run_json(host, "doctor", *extra, env=env)["checks"],
           "audit": run_json(host, "audit", env=env)["checks"]}
    if toolkit:
        got["verify"] = run_json(host, "verify", toolkit, *extra, env=env)["checks"]
    return got


REMEMBERED = " (remembered from an earlier build)"  # when the one build ran, not what it found


def answers(checks):
    """{id: sorted (level, message) pairs}: a check that covers several GPUs has one per GPU."""
    out = {}
    for item in checks:
        out.setdefault(item["id"], set()).add((item["level"], item["message"].replace(REMEMBERED, "")))
    return {key: sorted(value) for key, value in out.items()}


def agree(got):
    """The answers of the shared checks, after asserting every two commands give the same ones."""
    tables = {command: answers(checks) for command, checks in got.items()}
    for command, table in tables.items():  # a command shows only what the registry gives it
        assert set(table) <= checkregistry.ids_for(command), (command, set(table) - checkregistry.ids_for(command))
    shared = {}
    for first, second in combinations(sorted(tables), 2):
        for check_id in set(tables[first]) & set(tables[second]):
            assert tables[first][check_id] == tables[second][check_id], (check_id, first, second)
            shared.setdefault(check_id, set()).update((first, second))
    return shared, tables


def switched(host, env, toolkit):
    """The shell after `eval "$(cudaswitch use TOOLKIT)"`, as verify judges it."""
    diff = json.loads(host.run("use", toolkit, "--shell", "json", "--no-verify", env=env, check=True).stdout)
    out = {**host.env, **env, **diff["set"]}
    for name in diff["unset"]:
        out.pop(name, None)
    return out


def wrapper_nvcc(host):
    """/usr/local/bin/nvcc a script exec-ing the 13.0 toolkit's nvcc (a machine set up by hand): torch
    would take CUDA_HOME=/usr/local, which is no toolkit root."""
    kit = kits.install_classic(kits.cuda13("13.0"), host.path("/usr/local/cuda-13.0"), "13.0")
    bindir = host.path("/usr/local/bin")
    bindir.mkdir(parents=True)
    (bindir / "nvcc").write_text('#!/bin/sh\nexec %s/bin/nvcc "$@"\n' % kit)
    (bindir / "nvcc").chmod(0o755)
    return {"PATH": "%s:%s" % (bindir, BASE_PATH)}


def compat_libcuda(host, tmp_path):
    """13.1 with cuda-compat's compat/libcuda.so.580.65.06 on LD_LIBRARY_PATH, a 570 driver (CUDA 12.8)
    and an RTX 3090: forward compatibility is for data-center GPUs, so CUDA fails with 804."""
    root = kits.install_classic(kits.cuda13("13.1"), host.path("/usr/local/cuda-13.1"), "13.1")
    (root / "compat").mkdir()
    shutil.copy(build_libcuda(tmp_path / "compat-src", 13010, init_rc=0), root / "compat" / "libcuda.so.580.65.06")
    os.symlink("libcuda.so.580.65.06", root / "compat" / "libcuda.so.1")
    write_proc_version(host.root, "570.124.06")
    driver = build_libcuda(tmp_path / "driver", 12080, init_rc=0, gpus=["sm_86"])
    return {"PATH": BASE_PATH, "CUDASWITCH_LIBCUDA": str(driver), "LD_LIBRARY_PATH": str(root / "compat")}


def shadowing(host, tmp_path):
    """A 12.4 toolkit whose lib holds nvJitLink 12.1.105, and a venv whose torch came with the cu124
    wheels' 12.4.127 (tests/test_verify_shadowing.py's state)."""
    from tests.test_verify_shadowing import shadowed, wheel

    _, python, _ = shadowed(host, tmp_path)
    wheel(kits.site_packages(tmp_path / "venv"), "cusparse", "nvidia-cusparse-cu12", "12.3.1.170", "libcusparse.so.12")
    return {"PATH": BASE_PATH}, python


def test_no_toolkit(host):
    env = {"PATH": BASE_PATH}
    shared, tables = agree(outputs(host, env, CUDA_HOME_UNSET + "\n" + DRIVER_TOO_OLD))
    assert shared["env.torch_cuda_home"] == {"explain", "doctor"}
    assert shared["driver.present"] == {"explain", "doctor", "audit"}
    assert tables["audit"]["driver.present"] == [("info", "no NVIDIA driver found under %s" % host.root)]
    refused = host.run("verify", "--json", env=env)  # nothing to verify: one line, no report
    assert refused.returncode != 0 and refused.stdout == "" and len(refused.stderr.strip().splitlines()) == 1


def test_cuda_home_unset_with_a_wrapper_nvcc(host):
    env = wrapper_nvcc(host)
    text = CUDA_HOME_UNSET + "\n" + DRIVER_TOO_OLD
    shared, tables = agree(outputs(host, env, text))
    [(level, message)] = tables["doctor"]["env.torch_cuda_home"]
    assert shared["env.torch_cuda_home"] == {"explain", "doctor"}
    assert level == "warning" and "not a toolkit root" in message  # explain used to say ok for /usr/local
    shared, _ = agree(outputs(host, switched(host, env, "13.0"), text, toolkit="13.0"))
    assert shared["driver.supports_toolkit"] == {"explain", "doctor", "verify"}
    assert {"explain", "doctor", "audit"} <= shared["driver.present"]


def test_a_compat_libcuda_on_a_consumer_gpu(host, tmp_path):
    env = compat_libcuda(host, tmp_path)
    text = ERROR_804 + "\n" + DRIVER_TOO_OLD
    agree(outputs(host, env, text))
    shared, tables = agree(outputs(host, switched(host, env, "13.1"), text, toolkit="13.1"))
    assert shared["driver.forward_compat"] == {"explain", "doctor", "verify"}
    assert shared["driver.supports_toolkit"] == {"explain", "doctor", "verify", "audit"}
    assert [level for level, _ in tables["verify"]["driver.forward_compat"]] in (["error"], ["warning"])
    assert [level for level, _ in tables["audit"]["driver.supports_toolkit"]] == ["error"]


def test_library_shadowing(host, tmp_path):
    env, python = shadowing(host, tmp_path)
    shared, tables = agree(outputs(host, switched(host, env, "12.4"), NVJITLINK, toolkit="12.4", python=python))
    assert shared["env.library_shadowing"] == {"explain", "doctor", "verify"}
    [(level, message)] = tables["verify"]["env.library_shadowing"]
    assert level == "error" and "libnvJitLink.so.12 12.1.105" in message
