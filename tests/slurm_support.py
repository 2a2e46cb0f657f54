"""A one-host Slurm for tests: Debian's slurm-wlm slurmctld and slurmd, started from a generated
slurm.conf in tmp (this host is the only node; its own ports, state and spool dirs; AuthType
auth/none and CredType cred/none, which Slurm 22.05 ships, so no munge key is needed) and stopped
by the test. Nothing outside tmp is touched."""

import contextlib
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from tests import kits

CONF = """\
ClusterName=cudaswitch-test
SlurmctldHost={host}
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation={dir}/state
SlurmdSpoolDir={dir}/spool
SlurmctldPidFile={dir}/slurmctld.pid
SlurmdPidFile={dir}/slurmd.pid
SlurmctldLogFile={dir}/slurmctld.log
SlurmdLogFile={dir}/slurmd.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
SelectType=select/linear
SchedulerType=sched/builtin
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SwitchType=switch/none
NodeName={host} CPUs={cpus} State=UNKNOWN
PartitionName=test Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _stop(proc):
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=20)


@contextlib.contextmanager
def one_host_slurm(directory: Path, env: dict, extra: str = ""):
    """Yields the env (SLURM_CONF set) in which srun/sinfo talk to this test's own Slurm; `extra`
    lines are added to slurm.conf (a HealthCheckProgram)."""
    daemons = {name: kits.require(name) for name in ("slurmctld", "slurmd")}
    kits.require("srun")
    sinfo = kits.require("sinfo")
    for sub in ("state", "spool"):
        (directory / sub).mkdir(parents=True, exist_ok=True)
    conf = directory / "slurm.conf"
    host = socket.gethostname().split(".")[0]
    conf.write_text(CONF.format(host=host, ctld_port=_free_port(), d_port=_free_port(), dir=directory,
                                cpus=os.cpu_count() or 1) + extra)
    env = {**env, "SLURM_CONF": str(conf)}
    started = []
    try:
        for name, path in daemons.items():
            log = open(directory / (name + ".out"), "wb")
            started.append(subprocess.Popen([path, "-D", "-f", str(conf)], stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, env=env, cwd=directory, start_new_session=True))
            log.close()
        _wait_idle(sinfo, env, directory, started)
        yield env, host
    finally:
        for proc in reversed(started):
            _stop(proc)


def _wait_idle(sinfo, env, directory, started, limit=90):
    deadline = time.monotonic() + limit
    state = ""
    while time.monotonic() < deadline:
        if any(p.poll() is not None for p in started):
            break
        proc = subprocess.run([sinfo, "-h", "-o", "%t"], capture_output=True, text=True, timeout=30, env=env)
        state = proc.stdout.strip()
        if state == "idle":
            return
        time.sleep(1)
    logs = "".join(p.read_text(errors="replace")[-1500:] for p in sorted(directory.glob("*.out")))
    raise AssertionError("the one-host Slurm did not come up (sinfo: %r): %s" % (state, logs))
