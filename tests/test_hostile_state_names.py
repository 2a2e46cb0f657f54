"""500 seeded crafted states that name directories (tests/hostile_states.named_states), through the
real `list`, `current`, `use`, `doctor`, `audit` and `off` in real bash, with what `use` and `off`
print evaluated. Each state varies the module record (system, unloaded and loaded modules, marker
dir, an account restoring the attacker's MODULEPATH, _LMFILES_ and Lmod table, a missing, wrong
or copied seal), its outer values (every discovery input: CUDA_HOME, PATH, MODULEPATH, LMOD_CMD,
MODULES_CMD, CONDA_PREFIX, HOME, the root prefix ...) spelled every way a path can be, and scalars
that give a CUDA_HOME back. Every planted nvcc, modulefile, spider and modulecmd writes a marker
when run. After all of them: no marker, no traceback, nothing on stdout from a command that
failed, and no MODULEPATH dir the shell did not have.

Time: each state is a subshell of one of two bash processes run side by side. doctor and audit
(~0.4 s each, and their registry load is the one list, current and use make) run for every 20th
state, the other four commands for all: under 2 minutes on the quiet 2-core machine, several
more when other work shares it (hence the timeout)."""

import json
import shlex
import subprocess

import pytest

from tests import hostile_states
from tests.conftest import CUDASWITCH
from tests.shellrun import shell_path

WORKERS = 2
HEAVY_EVERY = 20
LIMIT = 60  # seconds for one command: a hang is a failure, not a stuck test

PRELUDE = r"""
ev() {  # a command whose stdout is shell code: evaluated when it succeeds, else it must be empty
    local out rc
    out=$(timeout %(limit)d %(exe)s "$@" --shell bash 2>>"$ERR"); rc=$?
    if [ $rc -ne 0 ]; then [ -z "$out" ] || echo "STDOUT-ON-FAILURE $CASE: $*"; else eval "$out"; fi
}
run() { timeout %(limit)d %(exe)s "$@" >/dev/null 2>>"$ERR"; }
gained() {  # MODULEPATH dirs not in $1, but cudaswitch's own marker dir: a `use` that swapped a
    # module the shell's LOADEDMODULES named adds it, and an `off` whose reload fails (one line) keeps it
    local IFS=: d
    for d in $MODULEPATH; do
        case ":$1:" in *":$d:"*) continue ;; esac
        [ "${d%%/modulefiles-*}" = "$CUDASWITCH_CACHE_DIR" ] || echo "MPGAIN $CASE: $d"
    done
}
"""


def case_lines(index, label, value, loaded):
    lines = ["CASE=%s; echo \"CASE $CASE\" >>\"$ERR\"" % shlex.quote(label),
             "(", "export CUDASWITCH_STATE=%s" % shlex.quote(value)]
    if loaded:
        lines.append("export LOADEDMODULES=%s" % shlex.quote(loaded))
    lines += ['mp0="$MODULEPATH"', "run list", "run current", "ev use 13.0"]
    if index % HEAVY_EVERY == 0:
        lines += ["run doctor", "run audit"]
    lines += ["ev off", 'gained "$mp0"', ")"]
    return lines


@pytest.fixture(scope="module")
def good_state(standard_host):
    proc = standard_host.run("use", "13.0", "--shell", "json", check=True)
    return hostile_states.decode(json.loads(proc.stdout)["set"]["CUDASWITCH_STATE"])


@pytest.mark.timeout(900)
def test_500_crafted_states_that_name_directories_run_nothing(standard_host, good_state, tmp_path):
    marker = tmp_path / "marker"
    names = hostile_states.plant(standard_host, tmp_path, marker)
    cases = hostile_states.named_states(good_state, names, standard_host.env)
    assert len(cases) == 500
    standard_host.run("list", check=True)  # the registry cache warm, as in a user's shell
    procs = []
    for worker in range(WORKERS):
        err = tmp_path / ("stderr%d" % worker)
        body = ["ERR=%s" % shlex.quote(str(err)), PRELUDE % {"limit": LIMIT, "exe": CUDASWITCH}]
        for index in range(worker, len(cases), WORKERS):
            body += case_lines(index, *cases[index])
        script = tmp_path / ("cases%d.sh" % worker)
        script.write_text("\n".join(body + ["echo DONE"]) + "\n")
        procs.append((err, subprocess.Popen([shell_path("bash"), "--norc", "--noprofile", str(script)],
                                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                            env=dict(standard_host.env), cwd=str(tmp_path))))
    for err, proc in procs:
        out, stderr = proc.communicate(timeout=900)
        log = err.read_text()
        assert out.rstrip().endswith("DONE"), stderr[-800:]
        assert log.count("CASE ") == len(cases) // WORKERS
        assert "Traceback" not in log and "Traceback" not in stderr, log[-2000:]
        findings = [line for line in out.splitlines() if line.startswith(("STDOUT-ON-FAILURE", "MPGAIN"))]
        assert findings == [], findings[:20]
    assert not marker.exists(), "ran what a state named:\n" + marker.read_text()[:2000]
