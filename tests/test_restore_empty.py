"""`off` after the user edited PATH or LD_LIBRARY_PATH while switched, in real bash, zsh and fish,
where the list was unset, empty or held an empty entry before `use`.

The user's entry stays, every other variable is back as it was, and no empty entry appears that
the list did not have before `use`: an empty entry means the current directory, so a leftover one
lets a repository's `bin/nvcc` or `libcudart.so` win (README, "Use"). So the value
expected after `off` is the edit applied to the start's entries as a list (`export PATH=/new:$PATH`
on an empty PATH gives `/new`, not `/new:`), and the empty entries the start had stay where they
were. An unset PATH is the shell's own in bash and zsh (started without one, they keep an
unexported default) and `set -e PATH` in fish. Each shell runs its ~50 cases in one process (bash
and zsh each in a subshell); the three together take ~50 s, so the module is in the slow tier."""

import json
import random
import sys

from cudaswitch.switch import envdiff
from tests.conftest import CUDASWITCH
from tests.shellrun import INIT, SHELLS, script
from cudaswitch import envstate

NEW = "/u/my bin"  # the user's own entry (a space: quoting is part of keeping it)
VARS = ("PATH", "LD_LIBRARY_PATH")
NAMES = VARS + ("CUDA_HOME", "CUDA_PATH", "CUDACXX", "CUDAToolkit_ROOT", "CUDASWITCH_STATE")
UNSET = None
# Start values of the edited list (None: unset); OTHER is replaced by another toolkit's dir, which
# `use` takes out and `off` must put back.
FIXED_STARTS = (UNSET, "", "/usr/bin:/bin:", ":/usr/bin:/bin")
POOL = ("/usr/bin", "/bin", "/s/a b", "OTHER")
SEED = 20240611
SEEDED = 8  # random starts per shell, each with an empty entry somewhere
# name: (code with {v} for the variable, does it export, prepend or append)
EDITS = {
    "bash": {"export-prepend": ('export {v}="%s":${v}' % NEW, True, "prepend"),
             "append": ('{v}=${v}:"%s"' % NEW, False, "append"),
             "export-append": ('export {v}=${v}:"%s"' % NEW, True, "append"),
             "prepend": ('{v}="%s":${v}' % NEW, False, "prepend")},
    "fish": {"prepend": ('set -gx {v} "%s" ${v}' % NEW, True, "prepend"),
             "append": ('set -gx {v} ${v} "%s"' % NEW, True, "append")},
}
EDITS["zsh"] = EDITS["bash"]
PROBE = ("%s -I -c 'import json, os, sys; print(json.dumps({\"tag\": sys.argv[1], \"set\": sys.argv[2], "
         "\"value\": sys.argv[3], \"child\": {n: os.environ.get(n) for n in sys.argv[4:]}}))' " % sys.executable)


def cases(shell, other):
    """(var, start, edit, through): every fixed start x edit, both ways of calling for PATH (the
    hook's function exports an unexported PATH for the call), and seeded random starts."""
    out = [(var, start, edit, through) for var in VARS for start in FIXED_STARTS for edit in EDITS[shell]
           for through in (("eval", "hook") if var == "PATH" else ("eval",))]
    rng = random.Random("%s-%d" % (shell, SEED))
    for _ in range(SEEDED):
        var = rng.choice(VARS)
        entries = [rng.choice(POOL) for _ in range(rng.randint(1, 3))]
        entries.insert(rng.randint(0, len(entries)), "")
        start = ":".join(other[var] if e == "OTHER" else e for e in entries)
        out.append((var, start, rng.choice(sorted(EDITS[shell])), rng.choice(("eval", "hook"))))
    return out


def probe(shell, tag, var):
    """Code printing the shell's own view of `var` and what a child sees of NAMES."""
    names = " ".join(NAMES)
    if shell == "fish":
        return ('if set -q %s; %s %s set "$%s" %s; else; %s %s "" "" %s; end'
                % (var, PROBE, tag, var, names, PROBE, tag, names))
    return '%s %s "${%s+set}" "${%s-}" %s' % (PROBE, tag, var, var, names)


def quoted(shell, value):
    if shell == "fish":
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return "'" + value.replace("'", "'\\''") + "'"


def start_code(shell, var, start, host_path):
    """The case's start: `var` as given (unset: as the shell has it without one in its
    environment; bash and zsh keep an unexported default PATH), the other list as usual."""
    lines = []
    for name in VARS:
        value = start if name == var else (host_path if name == "PATH" else UNSET)
        if shell == "fish":
            lines.append("set -e %s" % name if value is None else "set -gx %s %s" % (name, quoted(shell, value)))
        elif value is not None:
            lines.append("export %s=%s" % (name, quoted(shell, value)))
        elif name != "PATH":  # the shell's own unexported PATH stays (the process starts without one)
            lines.append("unset %s" % name)
    if shell == "fish":  # no subshells: what the case before may have left goes
        lines.append("set -e CUDA_HOME CUDA_PATH CUDACXX CUDAToolkit_ROOT CUDASWITCH_STATE")
    return lines


def switch_code(shell, through, command):
    if through == "hook":  # the `cudaswitch` function of `init` (loaded once per process)
        return "cudaswitch %s" % command
    if shell == "fish":
        return "%s %s --shell fish | source" % (CUDASWITCH, command)
    return 'eval "$(%s %s --shell %s)"' % (CUDASWITCH, command, shell)


def case_code(shell, i, case, host_path):
    var, start, edit, through = case
    body = start_code(shell, var, start, host_path) + [
        probe(shell, "%d-start" % i, var), switch_code(shell, through, "use 13.0 --no-verify"),
        probe(shell, "%d-used" % i, var), EDITS[shell][edit][0].format(v=var),
        probe(shell, "%d-edited" % i, var), switch_code(shell, through, "off"), probe(shell, "%d-off" % i, var)]
    if shell == "fish":
        return body
    return ["("] + ["  " + line for line in body] + [")"]


def run_cases(shell, host, all_cases, cwd):
    """Every case in one process of `shell`; {case index: {step: probe}}."""
    init = INIT[shell].replace("cudaswitch init", CUDASWITCH + " init", 1)
    lines = [init] + [line for i, case in enumerate(all_cases) for line in case_code(shell, i, case, host.env["PATH"])]
    env = {k: v for k, v in host.env.items() if k not in VARS}
    proc = script(shell, lines, env, timeout=600, cwd=cwd)
    seen: dict = {}
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            shown = json.loads(line)
            index, _, step = shown["tag"].partition("-")
            seen.setdefault(int(index), {})[step] = shown
    return seen, proc


def expected(start, where):
    """The edit applied to the start's entries as a list: what the user meant, no empty entry added."""
    entries = start.split(":") if start else []
    return ":".join([NEW] + entries if where == "prepend" else entries + [NEW])


def problems(shell, case, steps, root):
    """What a user would find wrong after `off` in one case (nothing: an empty list)."""
    var, _, edit, _ = case
    if sorted(steps) != ["edited", "off", "start", "used"]:
        return ["stopped after %s" % sorted(steps)]
    before, after = steps["start"], steps["off"]
    if steps["used"]["child"]["CUDA_HOME"] != root:
        return ["`use` did not switch: CUDA_HOME=%r" % steps["used"]["child"]["CUDA_HOME"]]
    _, exports, where = EDITS[shell][edit]
    want = expected(before["value"], where)
    out = []
    if (after["set"], after["value"]) != ("set", want):
        out.append("the shell has %s=%r, not %r" % (var, after["value"], want))
    child = after["child"][var]
    # an unexported PATH edited without `export` may stay unexported; an exported one must reach children
    if child != want and (exports or before["child"][var] is not None or child is not None):
        out.append("a child sees %s=%r, not %r" % (var, child, want))
    out += ["%s is %r, was %r" % (n, after["child"][n], before["child"][n])
            for n in NAMES if n != var and after["child"][n] != before["child"][n]]
    return out


def test_off_keeps_the_users_entry_and_adds_no_empty_entry_in_bash_zsh_and_fish(standard_host, tmp_path):
    root = str(standard_host.path("/usr/local/cuda-13.0"))
    other = {"PATH": str(standard_host.path("/usr/local/cuda-12.4/bin")),
             "LD_LIBRARY_PATH": str(standard_host.path("/usr/local/cuda-12.4/lib64"))}
    failures, count, stderr = [], 0, ""
    for shell in SHELLS:
        shell_cases = cases(shell, other)
        seen, proc = run_cases(shell, standard_host, shell_cases, tmp_path)
        count, stderr = count + len(shell_cases), stderr + proc.stderr[-600:]
        failures += ["%s: %s start=%r %s via %s: %s" % (shell, var, start, edit, through, problem)
                     for i, (var, start, edit, through) in enumerate(shell_cases)
                     for problem in problems(shell, shell_cases[i], seen.get(i, {}), root)]
    assert not failures, "%d problems in %d cases:\n%s\n%s" % (
        len(failures), count, "\n".join(failures[:30]), stderr)


def test_an_edit_to_a_list_the_switch_emptied_adds_no_empty_entry():
    """`use` unsets a CPATH that held only another toolkit's headers; `CPATH=$CPATH:/u/inc` then
    makes `:/u/inc`. After `off` the old headers are back with the user's dir where they put it,
    and no empty entry (gcc searches the current directory for one)."""
    kit = {"root": "/usr/local/cuda-13.1", "version": "13.1.0", "nvcc": "/usr/local/cuda-13.1/bin/nvcc",
           "bin_dirs": ["/usr/local/cuda-13.1/bin"], "lib_dirs": ["/usr/local/cuda-13.1/lib64"]}
    start = {"PATH": "/usr/bin", "CPATH": "/usr/local/cuda-12.4/include"}
    switched = envdiff.switch_env(start, kit, "shell", known_roots=["/usr/local/cuda-12.4", kit["root"]])[0]
    assert "CPATH" not in switched
    for edited, back in ((":/u/inc", "/usr/local/cuda-12.4/include:/u/inc"),
                         ("/u/inc:", "/u/inc:/usr/local/cuda-12.4/include")):
        assert envstate.pristine({**switched, "CPATH": edited})["CPATH"] == back
