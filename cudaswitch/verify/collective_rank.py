"""Run by the USER's Python (stdlib and torch only: nothing here may import cudaswitch) as one rank of
`doctor --collective`: `python -c <this source> BACKEND SECONDS MARKER` with torch's env://
variables set; prints `MARKER<json>MARKER` last with the stage it reached and the error that stopped it."""

import datetime
import json
import os
import sys


def rank_run(out: dict, backend: str, seconds: float) -> None:
    import torch
    import torch.distributed as dist

    out["stage"] = "backend"
    if not dist.is_available() or not getattr(dist, "is_%s_available" % backend)():
        raise RuntimeError("this torch.distributed has no %s backend" % backend)
    out["stage"] = "rendezvous"
    dist.init_process_group(backend, init_method="env://", timeout=datetime.timedelta(seconds=seconds))
    out["stage"] = "all_reduce"
    device = "cpu"
    if backend == "nccl":
        torch.cuda.set_device(out["rank"])
        device = "cuda:%d" % out["rank"]
    tensor = torch.ones(4, device=device)
    dist.all_reduce(tensor)
    out["sum"] = float(tensor[0].item())
    dist.destroy_process_group()
    out["stage"] = "done"


def main() -> None:
    backend, seconds, marker = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    out: dict = {"rank": int(os.environ.get("RANK", "0")), "stage": "import"}
    try:
        rank_run(out, backend, seconds)
    except BaseException as exc:  # every failure is the finding: report it, never a traceback
        lines = [line for line in str(exc).splitlines() if line.strip()]
        out["error"] = "%s: %s" % (type(exc).__name__, lines[-1].strip() if lines else "")
    sys.stdout.write("\n" + marker + json.dumps(out, default=str) + marker + "\n")
    sys.stdout.flush()


if __name__ == "__main__":  # run as `python -c <source>`
    main()
