"""Where a fast command's time goes: the interpreter's own start, `site`, the imports, the work.

`python -X importtime` of the very command the hook runs (its flags kept) gives the import share
of each top-level import: `site`, cudaswitch's own modules with the standard library they pull in,
anything else. The interpreter's bare start is `python -ES -c pass`; the work is what is left of
the command's median wall time. importtime's own bookkeeping inflates the import figures a little:
read them as shares, the wall times as the truth."""

import statistics
import subprocess

from bench import timing


def import_shares(argv, env, cwd):
    """{'site': ms, 'cudaswitch': ms, 'other': ms} of one run under -X importtime."""
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=120)
    shares = {"site": 0.0, "cudaswitch": 0.0, "other": 0.0}
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _, cumulative, name = line[len("import time:"):].split("|", 2)
        if name.startswith("  ") or not cumulative.strip().isdigit():
            continue  # nested: counted in its top-level import's cumulative time
        name = name.strip()
        group = "site" if name == "site" else "cudaswitch" if name.startswith("cudaswitch") else "other"
        shares[group] += int(cumulative) / 1000.0
    return shares


def breakdown(python, program, args, flags, env, cwd, rounds=15):
    """Medians (ms) of wall time, bare interpreter start, and the import shares of one command."""
    wall, bare = timing.alternate(timing.command_runner([program] + args, env, cwd),
                                  timing.command_runner([str(python), "-ES", "-c", "pass"], env, cwd), rounds)
    runs = [import_shares([str(python)] + flags + ["-X", "importtime", program] + args, env, cwd)
            for _ in range(5)]
    shares = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
    wall_ms, bare_ms = statistics.median(wall) * 1000, statistics.median(bare) * 1000
    imports = sum(shares.values())
    return {"command": " ".join(args), "wall_ms": round(wall_ms, 2), "interpreter_ms": round(bare_ms, 2),
            "imports_ms": {k: round(v, 2) for k, v in shares.items()},
            "work_and_exit_ms": round(max(wall_ms - bare_ms - imports, 0.0), 2)}


def text(rows):
    lines = ["", "where the time goes (medians, ms; imports from -X importtime):"]
    for row in rows:
        shares = row["imports_ms"]
        lines.append("  %-44s wall %6.2f = interpreter %5.2f + site %4.2f + cudaswitch imports %5.2f + other "
                     "imports %4.2f + work %5.2f" % (row["command"][:44], row["wall_ms"], row["interpreter_ms"],
                                                     shares["site"], shares["cudaswitch"], shares["other"],
                                                     row["work_and_exit_ms"]))
    return "\n".join(lines) + "\n"
