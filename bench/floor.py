"""The interpreter's floor: every fast command against `python -c pass` of the same interpreter.

What is measured is the program a user's shell runs: the one `cudaswitch init` names to the hook
(in a hooked shell `cudaswitch use ...` goes through it too). Where pip dropped the script's -E,
that is init's launcher, which starts Python with -E (launcher.py). The baseline is plain
`python -c pass` of the same interpreter. The script pip installed, typed outside a hooked shell,
is measured too (its `use` row, information only). This is a guard, not a race: everyday commands
stay within FLOOR, and no start-up machinery is added to move them.

Each row runs A B A B ... (timing.alternate), medians; the ratio is the figure to compare."""

import json
import re
import subprocess

from bench import timing
from bench.pairs import _cmd_text, result, side
from bench.scenario import SMALL_VERSION

FLOOR = 2.0  # x `python -c pass`: use, off, which, list, current, local, global, hook-env
PLAN = 3.0  # x `python -c pass`: torch --driver X --gpu Y (tables, no typer)
# Help has no budget: typer renders it, and typer builds a pydantic adapter per parameter
# (about 75 ms for --help, 180 ms for COMMAND --help here). A second renderer is what DESIGN retired.
HELP = None


def hook_program(small):
    """The program `init bash` names (__cudaswitch_bin), as the hook and the hook's wrapper run it."""
    text = subprocess.run([str(small.script), "init", "bash"], env=small.env, cwd=small.work, capture_output=True,
                          text=True, timeout=120, check=True).stdout
    return re.search(r"^__cudaswitch_bin='([^']+)'$", text, re.M).group(1)


def _cases(small):
    """(name, argv after the program, env, cwd, budget) of every measured command."""
    switched = subprocess.run([str(small.script), "use", SMALL_VERSION, "--shell", "json"], env=small.env,
                              cwd=small.work, capture_output=True, text=True, timeout=120, check=True).stdout
    after_use = {**small.env, **json.loads(switched)["set"]}
    entering = {k: v for k, v in small.env.items() if k != "CUDASWITCH_STATE"}
    scratch = small.work / "local-scratch"
    scratch.mkdir(exist_ok=True)
    return [
        ("use", ["use", SMALL_VERSION, "--shell", "bash"], small.env, small.work, FLOOR),
        ("off", ["off", "--shell", "bash"], after_use, small.work, FLOOR),
        ("which", ["which", SMALL_VERSION, "nvcc"], small.env, small.work, FLOOR),
        ("list", ["list"], small.env, small.work, FLOOR),
        ("current", ["current"], small.env, small.inside_project, FLOOR),
        ("local", ["local", SMALL_VERSION], small.env, scratch, FLOOR),
        ("hook-env", ["hook-env", "--shell", "bash"], entering, small.inside_project, FLOOR),
        ("help", ["--help"], small.env, small.work, HELP),
        ("use_help", ["use", "--help"], small.env, small.work, HELP),
        ("torch_plan", ["torch", "--driver", "550.54", "--gpu", "sm_86"], small.env, small.work, PLAN),
        # last: it writes config.toml, whose mtime is part of the registry cache's key
        ("global", ["global", SMALL_VERSION], small.env, small.work, FLOOR),
    ]


def fast_commands(small, python, rounds):
    """One result per command: the hook's program against `python -c pass`, alternately."""
    program = hook_program(small)
    baseline = [str(python), "-c", "pass"]
    results = []
    for name, args, env, cwd, budget in _cases(small):
        argv = [program] + args
        subprocess.run(argv, env=env, cwd=cwd, capture_output=True, timeout=300, check=True)  # warm its caches
        samples_a, samples_b = timing.alternate(timing.command_runner(argv, env, cwd),
                                                timing.command_runner(baseline, env, cwd), rounds)
        a = side("cudaswitch %s (the hook's program)" % " ".join(args), _cmd_text(argv, cwd), samples_a)
        b = side("python -c pass (same interpreter, site included)", _cmd_text(baseline), samples_b)
        results.append(result("floor_" + name.replace("-", "_"), a, b,
                              "<= %.1f x python -c pass" % budget if budget else "information",
                              lambda a, b, r, budget=budget: r <= budget if budget else None))
    results.append(_script_use(small, python, rounds))
    return results


def _script_use(small, python, rounds):
    """`use` through the script pip wrote (its #! line has no options: site runs), for comparison."""
    argv = [str(small.script), "use", SMALL_VERSION, "--shell", "bash"]
    baseline = [str(python), "-c", "pass"]
    samples_a, samples_b = timing.alternate(timing.command_runner(argv, small.env, small.work),
                                            timing.command_runner(baseline, small.env, small.work), rounds)
    return result("floor_use_pip_script", side("cudaswitch use %s (pip's script, site runs)" % SMALL_VERSION,
                                                _cmd_text(argv), samples_a),
                  side("python -c pass (same interpreter, site included)", _cmd_text(baseline), samples_b),
                  "information", lambda a, b, r: None)


def program_flags(program):
    """The interpreter options on a program's #! line (['-E'] for init's launcher), for running
    the same start under -X importtime."""
    with open(program, "rb") as handle:
        first = handle.readline().decode("utf-8", "replace")
    return [word for word in first[2:].split()[1:] if word.startswith("-")] if first.startswith("#!") else []
