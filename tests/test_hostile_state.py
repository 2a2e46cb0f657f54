"""CUDASWITCH_STATE, and what cudaswitch prints for shells and env files, under attack.

The state is one environment variable, so whoever can set one (ssh SendEnv, `docker run -e`, a CI
step, a shared account's rc file) chooses it, and every `off`, `use` and hooked prompt reads it.
Mirrored here: names in the state that are shell code (`a;touch X;b`, PROMPT_COMMAND) reaching
`off`'s output and the first prompt of a hooked shell; a 4 KB state of nested `(` that drove the
decoder to 23 GB; wrong types (`modules: {"outer": 5}`) giving tracebacks; `off` in a shell started
without PATH or with an empty one not giving PATH back as it was; dotenv and $GITHUB_ENV values
read back wrong. Real commands, real bash, zsh and fish, python-dotenv; a canary file that
anything run would create."""

import json
import marshal
import os
import shlex
import subprocess
import sys

import pytest

from tests import hostile_states
from tests.conftest import CUDASWITCH
from tests.shellrun import Interactive, script
from cudaswitch import envstate

MEMORY_CAP_KB = 3 << 20  # `ulimit -v` for each command: a decoder asking for gigabytes fails, visibly
CASE_SECONDS = 20
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def decode(value):
    """Our own `use`'s state (trusted here: the test wrote it) as the object it holds."""
    import binascii

    return marshal.loads(binascii.a2b_base64(value))


@pytest.fixture(scope="module")
def good_state(standard_host):
    proc = standard_host.run("use", "13.0", "--shell", "json", check=True)
    return decode(json.loads(proc.stdout)["set"]["CUDASWITCH_STATE"])


@pytest.fixture
def canary(tmp_path):
    return tmp_path / "canary"


@pytest.fixture
def project(tmp_path):
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / ".cudaversion").write_text("13.0\n")
    return tmp_path / "proj"


def injected(good, canary):
    """The attack of the report: a scalar name that is shell code, a list name too, and
    PROMPT_COMMAND (an identifier, so quoting alone would not help), with origin `project`."""
    return hostile_states.encode(dict(
        good, origin="project",
        scalars={"a;touch %s;b" % canary: ("evil", None), "PROMPT_COMMAND": ("touch %s" % canary, None)},
        lists={"x$(touch %s)" % canary: ("/x", None, 0)}))


EVAL = {"bash": 'eval "$(%s {cmd} --shell bash)"', "zsh": 'eval "$(%s {cmd} --shell zsh)"',
        "fish": "%s {cmd} --shell fish | source"}


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_state_names_that_are_code_run_nothing_in_off_use_or_hook_env(standard_host, good_state, canary,
                                                                      project, shell):
    """`off`, `use` and `hook-env` with the injected state, their output evaluated by the real
    shell: the canary stays absent, and no name from the state reaches the output."""
    env = dict(standard_host.env, CUDASWITCH_STATE=injected(good_state, canary))
    lines = [EVAL[shell].replace("{cmd}", cmd) % CUDASWITCH for cmd in ("off", "hook-env", "use 13.0")]
    proc = script(shell, lines + ["echo DONE"], env, cwd=str(project))
    assert "DONE" in proc.stdout and "Traceback" not in proc.stderr, proc.stderr
    assert not canary.exists(), "the state's names ran as shell code"
    for cmd in ("off", "hook-env", "use 13.0"):
        out = standard_host.run(*cmd.split(), "--shell", shell, env=env, cwd=str(project)).stdout
        assert "touch" not in out and "PROMPT_COMMAND" not in out, (cmd, out)


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_the_first_prompt_of_a_hooked_shell_with_a_hostile_state_runs_nothing(standard_host, good_state,
                                                                             canary, tmp_path, shell):
    """A shell started with the state in its environment (origin project, no project file here):
    its first prompt runs `hook-env`, which undoes the "switch"; then two more prompts (bash runs
    PROMPT_COMMAND at each)."""
    (tmp_path / "plain").mkdir()
    env = dict(standard_host.env, CUDASWITCH_STATE=injected(good_state, canary))
    init = {"bash": 'eval "$(%s init bash)"', "zsh": 'eval "$(%s init zsh)"', "fish": "%s init fish | source"}
    sh = Interactive(shell, env, cwd=str(tmp_path / "plain"))
    try:
        sh.run(init[shell] % CUDASWITCH)
        out = sh.run("echo alive") + sh.run("echo again")
    finally:
        sh.close()
    assert "alive" in out and "again" in out and "Traceback" not in out, out
    assert not canary.exists(), "the hook ran the state's names as code"


def capped(lines):
    """`lines` under a memory cap and a per-command time limit, as one bash script."""
    return ["ulimit -v %d" % MEMORY_CAP_KB] + lines


@pytest.mark.parametrize("opener", [b"(", b"[", b"{", b"(\xff\xff\xff\x7f" * 2])
def test_a_state_of_nested_brackets_is_refused_in_bounded_memory(standard_host, project, opener):
    """4 KB of `(` once asked the decoder for tuples of 673 million items each, nested: 23 GB.
    Under a 3 GiB cap `off`, `use` and `hook-env` finish, with no traceback."""
    value = hostile_states.raw((opener * 4096)[:4096])
    env = dict(standard_host.env, CUDASWITCH_STATE=value)
    for args in (("off", "--shell", "bash"), ("use", "13.0", "--shell", "bash"), ("hook-env", "--shell", "bash")):
        command = "timeout %d %s %s" % (CASE_SECONDS, CUDASWITCH, " ".join(args))
        proc = script("bash", capped([command]), env, cwd=str(project))
        assert proc.returncode == 0 and "Traceback" not in proc.stderr and "Error" not in proc.stderr, (
            args, proc.returncode, proc.stderr[-600:])


@pytest.mark.parametrize("modules", [{"outer": 5}, {"kind": "lmod", "unloaded": [5], "dir": "/x"},
                                     {"kind": "lmod", "unloaded": ["cuda/13.1"], "dir": "/x", "outer": []}, 7])
def test_a_state_with_wrong_types_is_no_state_not_a_traceback(standard_host, good_state, project, modules):
    """`modules: {"outer": 5}` gave an AttributeError in every `use` and hook prompt."""
    env = dict(standard_host.env, CUDASWITCH_STATE=hostile_states.encode(dict(good_state, modules=modules)))
    for args in (("off", "--shell", "bash"), ("use", "13.0", "--shell", "bash"), ("hook-env", "--shell", "bash"),
                 ("current",), ("list",)):
        proc = standard_host.run(*args, env=env, cwd=str(project), timeout=60)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, (args, proc.stderr[-600:])
    assert "nothing to undo" in standard_host.run("off", "--shell", "bash", env=env).stderr


def test_a_module_record_with_loaded_none_is_no_traceback(standard_host, good_state, project):
    """A module record `"loaded": None` (valid to both shape checks) with the marker module still
    loaded crashed every `use` and hook prompt with a TypeError: the shell kept failing on each cd."""
    modules = {"kind": "lmod", "unloaded": ["cuda/12.9"], "dir": "/x", "loaded": None}
    env = dict(standard_host.env, CUDASWITCH_STATE=hostile_states.encode(dict(good_state, modules=modules)),
               LOADEDMODULES="cuda/cudaswitch")
    for args in (("use", "13.0", "--shell", "bash"), ("hook-env", "--shell", "bash"), ("current",)):
        proc = standard_host.run(*args, env=env, cwd=str(project), timeout=60)
        assert "Traceback" not in proc.stderr and len(proc.stderr.splitlines()) <= 3, (args, proc.stderr[-600:])


def test_generated_hostile_states_run_nothing_and_never_trace(standard_host, good_state, canary, project, tmp_path):
    """The seeded corpus (tests/hostile_states.py, > 500 cases) in-process, in a child under a
    memory cap: every decision and renderer, each case under 2 s; all rendered shell text then
    evaluated by real bash, zsh and fish; the canary stays absent."""
    cases = hostile_states.states(good_state, canary)
    assert len(cases) >= 300
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    out = tmp_path / "out"
    out.mkdir()
    child = "import resource, runpy, sys; resource.setrlimit(resource.RLIMIT_AS, (%d, %d)); " \
            "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')" % ((MEMORY_CAP_KB << 10,) * 2)
    proc = subprocess.run([sys.executable, "-c", child, hostile_states.__file__, str(tmp_path / "cases.json"),
                           str(out), str(project)], capture_output=True, text=True, timeout=900,
                          env=dict(standard_host.env, PYTHONPATH=REPO), cwd=str(project))
    assert proc.returncode == 0, proc.stderr[-2000:]
    failures = json.loads((out / "failures.json").read_text())
    assert failures == [], failures[:20]
    source = {"bash": ". %s", "zsh": ". %s", "fish": "source %s"}
    for shell in ("bash", "zsh", "fish"):
        text = out / (shell + ".txt")
        assert text.stat().st_size > 0
        proc = script(shell, [source[shell] % text, "echo EVALUATED"], dict(standard_host.env), cwd=str(project))
        assert "EVALUATED" in proc.stdout, proc.stderr[-500:]
    assert not canary.exists(), "a rendered state ran as code"


def test_hostile_states_through_the_real_commands_and_bash(standard_host, good_state, canary, project):
    """A sample of the corpus through the real `off`, `use` and `hook-env`, their output evaluated
    by bash, each command under `timeout` and the memory cap: no traceback, nothing run."""
    cases = [(label, value) for label, value in hostile_states.states(good_state, canary)
             if "\x00" not in value and len(value) < (120 << 10)]
    sample = cases[::9] + [c for c in cases if c[0].startswith(("4096 x", "name 'a;touch", "modules/outer"))]
    assert len(sample) >= 60
    lines = []
    for label, value in sample:
        case = shlex.quote("CASE " + label)
        lines.append('echo %s >>"$ERR"; export CUDASWITCH_STATE=%s' % (case, shlex.quote(value)))
        for cmd in ("off", "use 13.0", "hook-env"):
            lines.append('out=$(timeout %d %s %s --shell bash 2>>"$ERR") && (eval "$out")'
                         % (CASE_SECONDS, CUDASWITCH, cmd))
    err, body = project / "stderr.txt", project / "cases.sh"
    body.write_text("\n".join(capped(["ERR=%s" % shlex.quote(str(err))] + lines + ["echo DONE"])) + "\n")
    proc = script("bash", [". %s" % shlex.quote(str(body))], dict(standard_host.env), cwd=str(project), timeout=1800)
    assert "DONE" in proc.stdout, proc.stderr[-800:]
    stderr = err.read_text()
    assert "Traceback" not in stderr and "MemoryError" not in stderr, stderr[-1500:]
    assert not canary.exists()


def test_every_renderer_refuses_a_name_that_is_not_an_identifier():
    """Defence in depth: a name reaching a renderer by any other way (not the state, which is
    refused first) is refused with one CudaSwitchError, for every format; values stay data."""
    from cudaswitch.errors import CudaSwitchError
    from cudaswitch.switch import shells

    for name in hostile_states.BAD_NAMES[:13]:
        for fmt in shells.FORMATS:
            for diff in ({"set": {name: "x"}, "unset": []}, {"set": {}, "unset": [name]}):
                with pytest.raises(CudaSwitchError):
                    shells.renderer(fmt)(diff)
    for fmt in ("bash", "zsh", "fish"):
        with pytest.raises(CudaSwitchError):
            shells.renderer(fmt)({"set": {"CUDA_HOME": "a\x00b"}, "unset": []})
    assert shells.renderer("bash")({"set": {"_Ok1": "$(x)"}, "unset": ["B"]}) == "export _Ok1='$(x)'\nunset B\n"


RESTORE_RUNS = int(os.environ.get("CUDASWITCH_RESTORE_RUNS", "10"))
SHOW_PATH = {"bash": "declare -p PATH 2>&1", "zsh": "typeset -p PATH 2>&1"}


@pytest.mark.parametrize("shell", ["bash", "zsh"])
@pytest.mark.parametrize("start", ["no PATH", "empty PATH"])
@pytest.mark.parametrize("through", ["hook", "eval"])
def test_use_then_off_leaves_path_declared_exactly_as_before(standard_host, shell, start, through):
    """`env -u PATH bash` keeps a default PATH it does not export; `PATH= bash` an empty exported
    one. `off` gave the first back exported and the second as /bin:/usr/bin. Now `declare -p PATH`
    (zsh: `typeset -p PATH`) is the same after every `use; off`, with the hook's functions and with
    a plain eval, RESTORE_RUNS times in one shell; and `use` did switch each time."""
    env = {k: v for k, v in standard_host.env.items() if k != "PATH"}
    if start == "empty PATH":
        env["PATH"] = ""
    if through == "hook":
        setup, use, off = ['eval "$(%s init %s)"' % (CUDASWITCH, shell)], "cudaswitch use 13.0", "cudaswitch off"
    else:
        setup, use, off = [], 'eval "$(%s use 13.0)"' % CUDASWITCH, 'eval "$(%s off)"' % CUDASWITCH
    if shell == "zsh" and start == "empty PATH":
        setup.insert(0, "PATH=")  # Debian's /etc/zsh/zshenv fills an empty PATH in before -f counts
    lines = setup + ["before=$(%s)" % SHOW_PATH[shell], "bad=0 ok=0",
                     "for ((i = 0; i < %d; i++)); do" % RESTORE_RUNS,
                     "  %s 2>/dev/null" % use,
                     "  [[ $PATH == */cuda-13.0/bin:* ]] && ok=$((ok + 1))",
                     "  %s 2>/dev/null" % off,
                     "  now=$(%s)" % SHOW_PATH[shell],
                     '  [[ $now == "$before" ]] || { bad=$((bad + 1)); echo "AFTER<$now>"; }',
                     "done", 'echo "BEFORE<$before>"', 'echo "OK=$ok BAD=$bad"']
    proc = script(shell, lines, env, timeout=60 + 30 * RESTORE_RUNS)
    assert "OK=%d BAD=0" % RESTORE_RUNS in proc.stdout, proc.stdout[-1500:] + proc.stderr[-800:]


def docker_env_file(text):
    """docker's --env-file reading (docker/cli pkg/kvfile): lines split on \\n with a trailing \\r
    dropped, leading white space trimmed, `#` lines skipped, NAME=VALUE split at the first `=`, the
    value taken as it is (quotes included)."""
    out = {}
    for line in text.split("\n"):
        line = line[:-1] if line.endswith("\r") else line
        line = line.lstrip()
        if line and not line.startswith("#"):
            name, _, value = line.partition("=")
            out[name] = value
    return out


def python_dotenv(text):
    import io

    dotenv = pytest.importorskip("dotenv")
    return dict(dotenv.dotenv_values(stream=io.StringIO(text)))  # interpolation on, as by default


DOTENV_HARD = ("$HOME", "a\\b", "\\", "it's", 'say "hi"', "$(touch x)", "`x`", "a #b", "a#b", "#x", "'q'",
               '"q"', " lead", "trail ", "${HOME}", "a\nb", "a\rb", "\\n", "\\$", "x=y", "é✓", "\udcff", "\t")


def test_dotenv_values_come_back_byte_exact_through_python_dotenv_and_docker_or_are_refused():
    """Every value a switch could write: what python-dotenv and docker read back is the value
    itself, or the renderer refused it with one CudaSwitchError (never a value read wrong)."""
    from hypothesis import given, settings, strategies as st

    from cudaswitch.errors import CudaSwitchError
    from cudaswitch.switch.shells import dotenv

    written = []

    def check(value):
        try:
            text = dotenv.render({"set": {"CUDA_HOME": value, "PATH": "/x/bin:" + value}, "unset": ["CUDA_ROOT"]})
        except CudaSwitchError:
            return
        written.append(value)
        want = {"CUDA_HOME": value, "PATH": "/x/bin:" + value, "CUDA_ROOT": ""}
        assert docker_env_file(text) == want, (value, text)
        assert python_dotenv(text) == want, (value, text)

    for value in DOTENV_HARD:
        check(value)
    assert {"$HOME", "a\\b", "it's", 'say "hi"', "a#b"} <= set(written)  # the report's $ and \\ come back
    alphabet = st.sampled_from(list("ab/ $\\'\"#{}=\n\r\t`é") + ["${", "\udcff"])
    given(st.lists(alphabet, max_size=12).map("".join))(settings(max_examples=300, deadline=2000)(check))()


DOLLAR_ROOT = "cuda $HOME \\x it's \"q\" a#b `x`"  # `$` and `\` read back wrong before
ROOTS = {"dollar": DOLLAR_ROOT, "brace": "cuda ${HOME}", "newline": "cuda\nLD_PRELOAD=x\nghadelimiter_"}


@pytest.fixture(scope="module")
def odd_roots(tmp_path_factory):
    """Toolkit roots whose paths hold what dotenv and $GITHUB_ENV readers treat specially, one host
    each, the root registered in config.toml (a path request may not hold a newline): `user:13.1`."""
    from tests import kits
    from tests.conftest import Host

    out = {}
    for key, name in ROOTS.items():
        base = tmp_path_factory.mktemp("odd-" + key)
        host = Host(base / "root", base / "work")
        root = base / "root" / "opt" / name
        kits.install_classic(kits.cuda13("13.1"), root, "13.1")
        (base / "work" / "config").mkdir(parents=True)
        (base / "work" / "config" / "config.toml").write_text("toolkits = [%s]\n" % json.dumps(str(root)))
        out[key] = host, root
    return out


def switched_to(host, fmt):
    return host.run("use", "user:13.1", "--shell", fmt)


def test_use_dotenv_gives_dollar_and_backslash_back_to_python_dotenv_and_docker(odd_roots):
    """`use --shell dotenv` for a root with `$`, `\\`, quotes and `#`: python-dotenv (which once
    gave `\\$` back for `$`) and docker both read CUDA_HOME and PATH as they were switched."""
    host, root = odd_roots["dollar"]
    proc = switched_to(host, "dotenv")
    assert proc.returncode == 0, proc.stderr
    want = json.loads(switched_to(host, "json").stdout)["set"]
    for read in (python_dotenv(proc.stdout), docker_env_file(proc.stdout)):
        assert read["CUDA_HOME"] == str(root) == want["CUDA_HOME"]
        assert read["PATH"] == want["PATH"] and read["CUDASWITCH_STATE"] == want["CUDASWITCH_STATE"]


@pytest.mark.parametrize("key", ["brace", "newline"])
def test_use_dotenv_refuses_a_value_no_dotenv_line_can_hold(odd_roots, key):
    """`${` (python-dotenv expands it, with no escape) and a newline: one line on stderr, exit 1,
    nothing on stdout, rather than a file read back wrong."""
    host, _ = odd_roots[key]
    proc = switched_to(host, "dotenv")
    assert proc.returncode == 1 and proc.stdout == "" and proc.stderr.count("\n") == 1, proc.stderr
    assert "dotenv" in proc.stderr and "Traceback" not in proc.stderr


def test_github_env_heredoc_uses_a_random_delimiter_the_value_cannot_end(odd_roots):
    """A root with newlines and lines that look like NAME=VALUE or a delimiter: `use --shell
    github`, applied with the runner's rules, sets exactly the switched values and nothing else;
    the delimiter is random (two runs differ); a value with a CR is refused."""
    from cudaswitch.errors import CudaSwitchError
    from cudaswitch.switch.shells import github
    from tests.test_github_step import apply_env_file

    host, _ = odd_roots["newline"]
    texts = [switched_to(host, "github").stdout for _ in range(2)]
    want = json.loads(switched_to(host, "json").stdout)["set"]
    assert texts[0] != texts[1]
    for text in texts:
        env = {}
        apply_env_file(text, env)
        assert env == want
    with pytest.raises(CudaSwitchError):
        github.render({"set": {"CUDA_HOME": "a\rb"}, "unset": []})


def test_off_merging_a_huge_state_list_with_a_huge_path_stays_bounded():
    """A state's PATH of 40,000 entries against a shell PATH of 40,000 others (both fit in an
    environment string): the edit script once built a 1.6-billion-cell table. `off` now merges in
    linear time when the table would be big, and still keeps the user's entries."""
    import time


    mine = ":".join("/s%d" % i for i in range(40000))
    now = ":".join("/u%d" % i for i in range(40000))
    start = time.monotonic()
    merged = envstate.merged("/before", "/ours:" + mine, now, 1)
    assert time.monotonic() - start < 5
    assert merged.split(":") == ["/before"] + now.split(":")  # the entry the switch took out comes back
