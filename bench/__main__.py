"""python -m bench [--json] [--rounds N] [--keep] [--cudaswitch PATH]

Builds its scenario in a temp dir, measures each pair alternately, prints a table (stdout; stderr
with --json, where stdout gets the JSON) and writes the JSON to bench/out/bench-<time>.json and
bench/out/latest.json."""

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

from bench import floor, pairs, phases, scenario
from bench.largehost import LargeHost

OUT = Path(__file__).resolve().parent / "out"


def progress(text):
    sys.stderr.write("bench: %s\n" % text)
    sys.stderr.flush()


def build(work, given):
    started = time.perf_counter()
    anchors = scenario.anchors()
    progress("anchors: %s" % ", ".join("%s=%s" % (k, v or "not installed") for k, v in anchors.items()))
    script, how = scenario.install_cudaswitch(work, given)
    progress("cudaswitch: %s" % how)
    small = scenario.SmallHost(work, script, anchors["lmod"])
    if anchors["direnv"]:
        small.allow_envrc(anchors["direnv"])
    small.warm()
    large = LargeHost(work, scenario.base_env(work, script), anchors["lmod"])
    progress("large host: %d toolkits, %d conda envs, %d modulefiles under %s; first (cold) list ..."
             % (len(large.toolkits), large.conda_envs, large.modulefiles, large.root))
    cold = time.perf_counter()
    listed = json.loads(scenario.run([script, "list", "--json"], env=large.env, cwd=large.work).stdout)
    cold = time.perf_counter() - cold
    progress("large host lists %d toolkits (cold run %.2f s)" % (len(listed), cold))
    setup = {"seconds": round(time.perf_counter() - started, 1), "install": how, "anchors": anchors,
             "large_host": {"toolkits": len(large.toolkits), "conda_envs": large.conda_envs,
                            "modulefiles": large.modulefiles, "records_listed": len(listed),
                            "cold_list_s": round(cold, 2)}}
    return script, small, large, setup


def measure(work, script, small, large, anchors, rounds):
    python = script.parent / "python"
    steps = [
        ("hook, nothing changed", lambda: pairs.hook_no_change(small, work, anchors["direnv"], rounds)),
        ("use vs Lmod", lambda: pairs.use_vs_lmod("use_vs_lmod", small, script, anchors["lmod"], rounds)),
        ("use over a loaded module", lambda: pairs.use_over_module(small, script, anchors["lmod"], rounds)),
        ("hook-env entering", lambda: pairs.hook_env_entering(small, script, anchors["direnv"], rounds)),
        ("list, large host", lambda: pairs.list_large(large, script, max(5, rounds // 3))),
        ("use vs Lmod, large host", lambda: pairs.use_vs_lmod(
            "use_vs_lmod_large_host", large, script, anchors["lmod"], rounds, "12.5", "12.5.1",
            budget=False)),
        ("which vs python", lambda: pairs.script_commands_vs_python(small, script, python, rounds)),
        ("floors", lambda: pairs.floors(small, script, python, rounds)),
        ("fast commands vs python -c pass", lambda: floor.fast_commands(small, python, rounds)),
    ]
    results = []
    for label, step in steps:
        progress("measuring %s ..." % label)
        got = step()
        results.extend(got if isinstance(got, list) else [got])
    return results


def where_time_goes(small, script):
    """The per-phase split of the hook program's commands (bench/phases.py)."""
    program = floor.hook_program(small)
    flags = floor.program_flags(program)
    python = script.parent / "python"
    commands = (["use", scenario.SMALL_VERSION, "--shell", "bash"], ["which", scenario.SMALL_VERSION, "nvcc"],
                ["list"], ["--help"], ["torch", "--driver", "550.54", "--gpu", "sm_86"])
    return [phases.breakdown(python, program, args, flags, small.env, small.work) for args in commands]


def fmt(side):
    if side.get("not_measured"):
        return "not measured"
    return "%8.3f ms  [%.3f-%.3f]" % (side["median_ms"], side["p25_ms"], side["p75_ms"])


def table(report):
    lines = ["cudaswitch bench: %s; %s; %d rounds; medians, [p25-p75]; load average %s" % (
        report["machine"]["summary"], report["setup"]["install"], report["rounds"],
        " ".join("%.2f" % x for x in report.get("load_average") or ()))]
    for res in report["results"]:
        verdict = {True: "MET", False: "MISSED", None: "-"}[res["budget_met"]]
        ratio = "ratio %.3f" % res["ratio"] if res["ratio"] is not None else "ratio n/a"
        lines.append("")
        lines.append("%-24s %s   budget: %s  [%s]" % (res["name"], ratio, res["budget"], verdict))
        for key in ("a", "b"):
            lines.append("  %s %-48s %s" % (key.upper(), res[key]["label"], fmt(res[key])))
    return "\n".join(lines) + "\n" + phases.text(report.get("phases") or [])


def machine():
    cpus = os.cpu_count()
    return {"summary": "%s, %d CPUs, Python %s" % (platform.machine(), cpus, platform.python_version()),
            "cpus": cpus, "kernel": platform.release(), "python": sys.version.split()[0]}


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[1])
    parser.add_argument("--json", action="store_true", help="JSON on stdout (the table goes to stderr)")
    parser.add_argument("--rounds", type=int, default=50, help="A/B rounds per pair (default 50)")
    parser.add_argument("--keep", action="store_true", help="keep the scenario's temp dir")
    parser.add_argument("--cudaswitch", help="measure this console script instead of a fresh venv install")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    load_at_start = os.getloadavg()  # others' work on the machine: the ratios of one run are what count
    work = Path(tempfile.mkdtemp(prefix="cudaswitch-bench-"))
    cwd = os.getcwd()
    try:
        script, small, large, setup = build(work, args.cudaswitch)
        results = measure(work, script, small, large, setup["anchors"], args.rounds)
        progress("measuring where the time goes ...")
        split = where_time_goes(small, script)
    finally:
        os.chdir(cwd)
        if args.keep:
            progress("scenario kept in %s" % work)
        else:
            shutil.rmtree(work, ignore_errors=True)
    report = {"when": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "command": "python -m bench " + " ".join(
        argv if argv is not None else sys.argv[1:]), "machine": machine(), "rounds": args.rounds,
        "setup": setup, "results": results, "phases": split,
        "load_average": os.getloadavg(), "load_average_at_start": load_at_start,
        "total_s": round(time.perf_counter() - started, 1)}
    OUT.mkdir(exist_ok=True)
    text = json.dumps(report, indent=2)
    (OUT / ("bench-%s.json" % time.strftime("%Y%m%d-%H%M%S"))).write_text(text)
    (OUT / "latest.json").write_text(text)
    (sys.stderr if args.json else sys.stdout).write(table(report))
    if args.json:
        sys.stdout.write(text + "\n")
    progress("done in %.0f s; JSON in %s" % (report["total_s"], OUT / "latest.json"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
