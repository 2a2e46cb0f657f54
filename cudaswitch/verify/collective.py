"""`doctor --collective`: the guides' two-rank NCCL test, done with the user's torch. Two processes
of its Python rendezvous on loopback and run one all_reduce (NCCL where two GPUs are visible, else
gloo on the CPU) under a hard timeout; a failure names the layer that failed (library, backend,
interface, rendezvous) in one line. An interface the user chose (GLOO_SOCKET_IFNAME,
NCCL_SOCKET_IFNAME) is kept, so the test answers for their settings; else loopback is used."""

import re
import socket
import threading

from cudaswitch.verify.checkregistry import Ask, registered
from cudaswitch.verify.compat import check
from cudaswitch.verify.runner import run_script

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from cudaswitch.verify.host import Host

WORLD = 2
INTERFACE = re.compile(r"Unable to find address for|SOCKET_IFNAME|no socket interface|interface", re.I)
LIBRARY = re.compile(r"undefined symbol|cannot open shared object|\blib\w+\.so", re.I)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run_ranks(python: str, env: dict, backend: str, timeout: float) -> list:
    """Each rank's report ({"rank", "stage", "error"?, "sum"?}), both run at once under `timeout` s."""
    base = {**env, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port()), "WORLD_SIZE": str(WORLD)}
    args = [backend, str(max(timeout / 2, 1.0))]  # the rendezvous gets half the time
    base.setdefault("GLOO_SOCKET_IFNAME", "lo")
    base.setdefault("NCCL_SOCKET_IFNAME", "lo")
    reports: list = [None] * WORLD

    def rank(index: int) -> None:
        payload, error = run_script(python, "collective_rank.py", args, {**base, "RANK": str(index)}, timeout)
        reports[index] = payload or {"rank": index, "stage": None, "error": error}

    threads = [threading.Thread(target=rank, args=(i,)) for i in range(WORLD)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return reports


def failed_layer(report: dict) -> str:
    """The layer a rank's failure belongs to, from the stage it reached and its error."""
    error, stage = report.get("error") or "", report.get("stage")
    if stage == "import" or LIBRARY.search(error):
        return "library"
    if stage == "rendezvous" and INTERFACE.search(error):
        return "interface"
    return {"backend": "backend", "rendezvous": "rendezvous", "all_reduce": "backend"}.get(stage or "", "rendezvous")


@registered("collective.all_reduce", layer="framework", shown_by=("doctor",))
def all_reduce(host: "Host", ask: Ask) -> list:
    if not host.collective:
        return []  # asked for with `doctor --collective` only: it starts two torch processes
    if not host.python:
        return [check("collective.all_reduce", "info", "cannot run the collective test because no python3 was found")]
    gpus = len(host.torch.get("devices") or [])
    backend = "nccl" if gpus >= WORLD else "gloo"
    reports = run_ranks(host.python, host.env, backend, host.timeout)
    facts = {"backend": backend, "ranks": reports, "timeout_s": host.timeout}
    bad = [r for r in reports if r.get("stage") != "done" or r.get("sum") != float(WORLD)]
    said = "%d ranks of %s, %s on %s" % (WORLD, host.python, backend, "%d GPUs" % WORLD if gpus >= WORLD else "CPU")
    if not bad:
        return [check("collective.all_reduce", "ok", "all_reduce worked: " + said, None, **facts)]
    first = next((r for r in bad if r.get("error")), bad[0])
    layer = failed_layer(first)
    facts["layer"] = layer
    return [check("collective.all_reduce", "error", "all_reduce failed at the %s layer (%s): rank %s: %s" % (
        layer, said, first.get("rank"), first.get("error") or "sum %s, expected %d" % (first.get("sum"), WORLD)),
        HINTS[layer], **facts)]


HINTS = {"library": "`cudaswitch doctor` names the library torch loads from the wrong place",
         "backend": "run with NCCL_DEBUG=INFO (every rank) to see the failing call",
         "interface": "set GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME to an interface that exists (`ip -br addr`)",
         "rendezvous": "check MASTER_ADDR/MASTER_PORT reach rank 0 and no firewall blocks the port"}
