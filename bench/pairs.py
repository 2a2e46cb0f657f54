"""The measured pairs. Each returns a result dict: name, a and b (label, command, summary in ms),
ratio (median a / median b), and the budget (see the README) with whether this run met it."""

import os
import shlex
import subprocess

from bench import timing
from bench.scenario import SMALL_VERSION

HOOK_SCRIPT = r"""
set -u
rounds=$1 batch=$2 cs_dir=$3 de_dir=$4 with_direnv=$5 counter=$6
eval "$(cudaswitch init bash)"
__cudaswitch_bin=$(type -P cudaswitch)  # init names the real script; count through the wrapper
cd "$cs_dir" && __cudaswitch_hook
[[ -n ${CUDASWITCH_STATE-} ]] || { echo "the hook did not apply the project file" >&2; exit 3; }
: >"$counter"  # from here on, every cudaswitch process the hook starts is counted
if [[ $with_direnv == 1 ]]; then
    eval "$(direnv hook bash)"
    cd "$de_dir" && _direnv_hook
    [[ -n ${DIRENV_DIR-} ]] || { echo "direnv did not load the .envrc" >&2; exit 3; }
fi
for ((i = 0; i < rounds; i++)); do
    cd "$cs_dir"
    t0=$EPOCHREALTIME
    for ((j = 0; j < batch; j++)); do __cudaswitch_hook; done
    t1=$EPOCHREALTIME
    t2=0 t3=0
    if [[ $with_direnv == 1 ]]; then
        cd "$de_dir"
        t2=$EPOCHREALTIME
        _direnv_hook
        t3=$EPOCHREALTIME
    fi
    echo "$t0 $t1 $t2 $t3"
done
"""


def side(label, command, samples):
    return {"label": label, "command": command, **timing.summary(samples)} if samples else \
        {"label": label, "command": command, "not_measured": True}


def result(name, a, b, budget_text, check):
    """check(a, b, ratio) -> True/False, or None where the budget cannot be judged (no anchor)."""
    ratio = a["median_ms"] / b["median_ms"] if "median_ms" in a and "median_ms" in b else None
    return {"name": name, "a": a, "b": b, "ratio": ratio, "budget": budget_text,
            "budget_met": check(a, b, ratio) if "median_ms" in a else None}


def _cmd_text(argv, cwd=None):
    return ("cd %s && " % shlex.quote(str(cwd)) if cwd else "") + " ".join(shlex.quote(str(a)) for a in argv)


def hook_no_change(small, work, direnv, rounds, batch=200):
    """The real __cudaswitch_hook, timed inside one bash over `batch` calls per sample, against
    direnv's own _direnv_hook (`eval "$(direnv export bash)"`) in a steady allowed dir.

    cudaswitch is reached through a counting wrapper: the count after the loop proves the hook
    started no process while nothing changed."""
    counter, wrapper_dir = work / "hook-count", work / "counting-bin"
    wrapper_dir.mkdir(exist_ok=True)
    (wrapper_dir / "cudaswitch").write_text('#!/bin/sh\necho run >> %s\nexec %s "$@"\n' % (
        shlex.quote(str(counter)), shlex.quote(str(small.script))))
    (wrapper_dir / "cudaswitch").chmod(0o755)
    env = {**small.env, "PATH": str(wrapper_dir) + os.pathsep + small.env["PATH"]}
    args = [rounds + 3, batch, small.inside_project, small.inside_envrc_project, 1 if direnv else 0, counter]
    proc = subprocess.run(["bash", "--norc", "--noprofile", "-c", HOOK_SCRIPT, "bench-hook", *map(str, args)],
                          env=env, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError("hook bench failed: %s" % proc.stderr[-2000:])
    stamps = [[float(x) for x in line.split()] for line in proc.stdout.splitlines()][3:]
    runs = counter.read_text().count("run")
    a = side("hook, nothing changed (bash function, per call)", "__cudaswitch_hook  # x%d per sample, %s"
             % (batch, small.inside_project), [(t1 - t0) / batch for t0, t1, _, _ in stamps])
    a["processes_started"] = runs
    b = side("direnv hook, steady dir", "_direnv_hook  # eval \"$(direnv export bash)\" in %s"
             % small.inside_envrc_project, [t3 - t2 for _, _, t2, t3 in stamps] if direnv else [])
    return result("hook_no_change", a, b, "no process; < 1 ms; <= 0.5 x direnv",
                  lambda a, b, r: a["processes_started"] == 0 and a["median_ms"] < 1.0
                  and (r is None or r <= 0.5))


def use_vs_lmod(name, host, script, lmod, rounds, request=SMALL_VERSION, module=SMALL_VERSION, budget=True):
    """`use REQUEST` and Lmod's load of the module for the same toolkit, each from a fresh shell's env."""
    argv_a = [str(script), "use", request, "--shell", "bash"]
    samples_a, samples_b = [], []
    argv_b = [lmod, "bash", "load", "cuda/" + module] if lmod else None
    if lmod:
        samples_a, samples_b = timing.alternate(timing.command_runner(argv_a, host.env, host.work),
                                                timing.command_runner(argv_b, host.env, host.work), rounds)
    else:
        samples_a, _ = timing.alternate(timing.command_runner(argv_a, host.env, host.work), lambda: 0, rounds)
    a = side("cudaswitch use %s (caches warm)" % request, _cmd_text(argv_a), samples_a)
    b = side("Lmod load cuda/%s" % module, _cmd_text(argv_b) if lmod else "$LMOD_CMD bash load", samples_b)
    return result(name, a, b, "<= 0.9 x Lmod load" if budget else "information",
                  (lambda a, b, r: None if r is None else r <= 0.9) if budget else (lambda a, b, r: None))


def hook_env_entering(small, script, direnv, rounds):
    """A shell arriving in a project: hook-env with no CUDASWITCH_STATE vs direnv with no DIRENV_*
    state, each from two levels below its project file."""
    env_a = {k: v for k, v in small.env.items() if k != "CUDASWITCH_STATE"}
    argv_a = [str(script), "hook-env", "--shell", "bash"]
    check = subprocess.run(argv_a, env=env_a, cwd=small.inside_project, capture_output=True, text=True,
                           timeout=60)
    if "CUDA_HOME='%s'" % small.toolkit not in check.stdout:
        raise RuntimeError("hook-env did not switch to the project's toolkit: %s" % check.stderr)
    run_a = timing.command_runner(argv_a, env_a, small.inside_project)
    argv_b = [direnv, "export", "bash"] if direnv else None
    if direnv:
        check = subprocess.run(argv_b, env=small.env, cwd=small.inside_envrc_project, capture_output=True,
                               text=True, timeout=60)
        if "CUDA_HOME" not in check.stdout:
            raise RuntimeError("direnv did not load the .envrc: %s" % check.stderr)
        samples_a, samples_b = timing.alternate(run_a, timing.command_runner(
            argv_b, small.env, small.inside_envrc_project), rounds)
    else:
        samples_a, samples_b = timing.alternate(run_a, lambda: 0, rounds)[0], []
    a = side("hook-env entering a project", _cmd_text(argv_a, small.inside_project), samples_a)
    b = side("direnv entering an allowed .envrc", _cmd_text(argv_b or ["direnv"], small.inside_envrc_project),
             samples_b)
    return result("hook_env_entering", a, b, "<= 1.0 x direnv entering",
                  lambda a, b, r: None if r is None else r <= 1.0)


def list_large(large, script, rounds):
    argv_a = [str(script), "list", "--json"]
    argv_b = argv_a + ["--refresh"]
    samples_a, samples_b = timing.alternate(timing.command_runner(argv_a, large.env, large.work),
                                            timing.command_runner(argv_b, large.env, large.work), rounds,
                                            warmup=1)
    a = side("list --json, caches warm, large host", _cmd_text(argv_a), samples_a)
    b = side("list --json --refresh, large host", _cmd_text(argv_b), samples_b)
    return result("list_large", a, b, "warm <= 50 ms; refresh <= 2 s",
                  lambda a, b, r: a["median_ms"] <= 50 and b["median_ms"] <= 2000)


def floors(small, script, python, rounds):
    argv_a, argv_b = [str(script), "--help"], [str(python), "-c", "pass"]
    samples_a, samples_b = timing.alternate(timing.command_runner(argv_a, small.env, small.work),
                                            timing.command_runner(argv_b, small.env, small.work), rounds)
    return result("floors", side("cudaswitch --help (pip script; typer renders it)", _cmd_text(argv_a), samples_a),
                  side("python -c pass (the venv's interpreter)", _cmd_text(argv_b), samples_b),
                  "information", lambda a, b, r: None)


def script_commands_vs_python(small, script, python, rounds):
    """The everyday commands a script calls run without typer: `which` against the interpreter's
    own start (budget: 3x `python -c pass`)."""
    argv_a, argv_b = [str(script), "which", SMALL_VERSION, "nvcc"], [str(python), "-c", "pass"]
    samples_a, samples_b = timing.alternate(timing.command_runner(argv_a, small.env, small.work),
                                            timing.command_runner(argv_b, small.env, small.work), rounds)
    return result("which_vs_python", side("cudaswitch which %s nvcc" % SMALL_VERSION, _cmd_text(argv_a), samples_a),
                  side("python -c pass (the venv's interpreter)", _cmd_text(argv_b), samples_b),
                  "<= 3.0x", lambda a, b, r: r <= 3.0)


LOADED_ENV = ('source "$LMOD_PKG/init/bash" && module load cuda/$1 && '
              'python3 -c "import os, json; print(json.dumps(dict(os.environ)))"')


def use_over_module(host, script, lmod, rounds, request="13.0", module=SMALL_VERSION):
    """`use REQUEST` in a shell where `module load cuda/MODULE` ran: the one case where `use` starts a
    process (the module system's swap of cuda/MODULE for cudaswitch's marker), against Lmod's own load."""
    if not lmod:
        return result("use_over_loaded_module", side("use over a loaded module", "", []),
                      side("Lmod load", "", []), "information", lambda a, b, r: None)
    proc = subprocess.run(["bash", "--norc", "--noprofile", "-c", LOADED_ENV, "bench", module], env=host.env,
                          capture_output=True, text=True, timeout=120)
    loaded = __import__("json").loads(proc.stdout)
    if "cuda/" + module not in loaded.get("LOADEDMODULES", ""):
        raise RuntimeError("module load cuda/%s did not load: %s" % (module, proc.stderr[-2000:]))
    argv_a = [str(script), "use", request, "--shell", "bash"]
    check = subprocess.run(argv_a, env=loaded, cwd=host.work, capture_output=True, text=True, timeout=60)
    if "cuda/cudaswitch" not in check.stdout:
        raise RuntimeError("use did not swap the module out: %s" % check.stderr[-2000:])
    argv_b = [lmod, "bash", "load", "cuda/" + module]
    samples_a, samples_b = timing.alternate(timing.command_runner(argv_a, loaded, host.work),
                                            timing.command_runner(argv_b, host.env, host.work), rounds)
    a = side("cudaswitch use %s over module cuda/%s (swap)" % (request, module), _cmd_text(argv_a), samples_a)
    b = side("Lmod load cuda/%s" % module, _cmd_text(argv_b), samples_b)
    return result("use_over_loaded_module", a, b, "information (Lmod runs inside this `use`)",
                  lambda a, b, r: None)
