"""`audit --expect POLICY.toml`: a site policy checked on a node, as Slurm's HealthCheckProgram
runs it. The driver is a gcc-built libcuda stand-in (a real shared library answering cuInit and
cuDriverGetVersion), the toolkit a real nvcc, and the Slurm a real one-host slurmctld + slurmd."""

import json
import shlex
import subprocess
import time
from pathlib import Path

from tests import kits
from tests.conftest import CUDASWITCH, Host
from tests.test_json_schemas import validate
from tests.slurm_support import one_host_slurm
from tests.verify_support import build_libcuda


def node(tmp_path, cuda=12040, gpus=("sm_86",)):
    """A node with CUDA 13.1 in /usr/local and an NCCL 2.21.5 in /usr/lib/x86_64-linux-gnu."""
    host = Host(tmp_path / "root", tmp_path / "work")
    kits.install_classic(kits.cuda13("13.1"), host.path("/usr/local/cuda-13.1"), "13.1")
    lib = host.path("/usr/lib/x86_64-linux-gnu")
    lib.mkdir(parents=True, exist_ok=True)
    (lib / "libnccl.so.2.21.5").write_bytes(b"\x7fELF")
    (lib / "libnccl.so.2").symlink_to("libnccl.so.2.21.5")
    host.env["CUDASWITCH_LIBCUDA"] = str(build_libcuda(tmp_path / "lib", cuda, init_rc=0, gpus=gpus))
    return host


def policy(tmp_path, text, name="policy.toml"):
    (tmp_path / name).write_text(text)
    return str(tmp_path / name)


HOLDS = 'toolkits = ["13.1"]\ndriver = "12.2"\ngpus = 1\nnccl = "2.18"\n'


def test_a_policy_the_node_meets_exits_0_and_json_has_every_requirement(tmp_path):
    host = node(tmp_path)
    path = policy(tmp_path, HOLDS)
    proc = host.run("audit", "--expect", path, timeout=300)
    assert proc.returncode == 0 and proc.stdout.startswith("policy met:"), proc.stdout + proc.stderr
    data = json.loads(host.run("audit", "--expect", path, "--json", timeout=300).stdout)
    assert data["met"] is True
    validate(data, "audit_expect")  # the JSON shape shipped in the package
    assert [c["id"] for c in data["checks"]] == ["policy.driver", "policy.gpus", "policy.nccl", "policy.toolkit"]
    assert data["checks"][2]["facts"]["have"] == "2.21.5"
    assert data["checks"][3]["facts"]["root"].endswith("/usr/local/cuda-13.1")


def test_the_first_unmet_requirement_is_one_short_line_and_exit_1(tmp_path):
    host = node(tmp_path, gpus=("sm_86",))
    cases = {'driver = "12.6"\n': "driver CUDA 12.4 (policy: driver CUDA 12.6+)",
             'gpus = 8\ndriver = "12.2"\n': "1 GPUs (policy: 8+)",  # the driver holds; the GPU count does not
             'nccl = "2.23"\n': "NCCL 2.21.5 (policy: 2.23+)",
             'toolkits = ["13.1", "12.8"]\n': "toolkit 12.8: "}
    for text, line in cases.items():
        proc = host.run("audit", "--expect", policy(tmp_path, text), timeout=300)
        assert proc.returncode == 1, (text, proc.stdout, proc.stderr)
        [out] = proc.stdout.splitlines()
        assert out.startswith("policy unmet: " + line), (text, out)
        assert len(out) < 200  # a Slurm drain reason
    data = json.loads(host.run("audit", "--expect", policy(tmp_path, 'gpus = 2\ndriver = "12.2"\n'),
                               "--json").stdout)
    assert data["met"] is False and [c["level"] for c in data["checks"]] == ["ok", "error"]


def test_a_malformed_policy_is_one_line_and_exit_2(tmp_path):
    host = Host(tmp_path / "root", tmp_path / "work")
    for text in ("drivr = \"12.4\"\n", "gpus = \"eight\"\n", "toolkits = \"12.4\"\n", "driver = \"new\"\n",
                 "[oops\n", ""):
        proc = host.run("audit", "--expect", policy(tmp_path, text))
        assert proc.returncode == 2 and proc.stdout == "", (text, proc.stdout)
        assert len(proc.stderr.splitlines()) == 1 and "--expect %s/" % tmp_path in proc.stderr, (text, proc.stderr)
    proc = host.run("audit", "--expect", str(tmp_path / "missing.toml"))
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1


README = Path(__file__).resolve().parent.parent / "README.md"


def readme_health_script(exports, cudaswitch, policy_path):
    """The README's HealthCheckProgram script as written, with this test's environment exported."""
    text = README.read_text()
    block = text[text.index("    #!/bin/bash\n"):]
    lines = [line[4:] for line in block[:block.index("\n\n")].splitlines()]
    body = "\n".join(lines[1:]).replace("/etc/cudaswitch/policy.toml", policy_path)
    body = body.replace("$(cudaswitch ", "$(%s " % cudaswitch)
    return "#!/bin/bash\n" + exports + "\n" + body + "\n"


def node_state(env, sinfo):
    proc = subprocess.run([sinfo, "-h", "-N", "-o", "%t|%E"], capture_output=True, text=True, timeout=30, env=env)
    return proc.stdout.strip()


def test_slurm_drains_the_node_when_the_policy_fails_and_leaves_it_idle_when_it_holds(tmp_path):
    host = node(tmp_path)
    slurm_dir, marker = tmp_path / "slurm", tmp_path / "health.ran"
    path = policy(tmp_path, HOLDS)
    script = tmp_path / "health.sh"
    e = host.env
    exports = "".join("export %s=%s\n" % (key, shlex.quote(str(value))) for key, value in (
        ("SLURM_CONF", slurm_dir / "slurm.conf"), *((k, e[k]) for k in (
            "PATH", "HOME", "CUDASWITCH_ROOT", "CUDASWITCH_LIBCUDA", "CUDASWITCH_CACHE_DIR", "CUDASWITCH_CONFIG_DIR",
            "CUDASWITCH_DATA_DIR"))))
    script.write_text(readme_health_script(exports + "echo ran >> %s" % marker, CUDASWITCH, path))
    script.chmod(0o755)
    sinfo = kits.require("sinfo")
    extra = "HealthCheckProgram=%s\nHealthCheckInterval=2\nHealthCheckNodeState=ANY\n" % script
    with one_host_slurm(slurm_dir, host.env, extra) as (env, _):
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(marker.read_text().splitlines() if marker.exists() else []) < 3:
            time.sleep(1)
        assert len(marker.read_text().splitlines()) >= 3  # slurmd ran the check, more than once
        assert node_state(env, sinfo) == "idle|none"
        policy(tmp_path, 'driver = "12.6"\ngpus = 1\n')  # the site raises its minimum driver
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not node_state(env, sinfo).startswith("drain"):
            time.sleep(1)
        assert node_state(env, sinfo) == "drain|policy unmet: driver CUDA 12.4 (policy: driver CUDA 12.6+)"
