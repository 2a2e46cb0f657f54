"""A generated corpus of hostile project directories (tests/hostile_corpus.py, seeded, 1,000 cases
by default: CUDASWITCH_CORPUS_SIZE / CUDASWITCH_CORPUS_SEED change it) through `hook-env` and
through the real bash, zsh and fish hooks. For every case: nothing of the repo runs (canary), no
traceback, no hang (each case bounded at 5 s), stdout empty on a refusal, at most one line per
message, the secret behind a link never on stderr, and no path inside a repo reaches the shell."""

import os
import select
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from cudaswitch.switch.shells import bash, fish, zsh
from tests.conftest import CUDASWITCH
from tests.hostile_corpus import SECRET, generate
from tests.shellrun import shell_path

SIZE = int(os.environ.get("CUDASWITCH_CORPUS_SIZE", "1000"))
SEED = int(os.environ.get("CUDASWITCH_CORPUS_SEED", "13"))
CASE_LIMIT = 5.0


@pytest.fixture(scope="module")
def corpus(standard_host, tmp_path_factory):
    base = tmp_path_factory.mktemp("corpus")
    canary = base / "canary"
    cases = generate(base, SIZE, SEED, canary)
    env = dict(standard_host.env, PATH=standard_host.env["PATH"] + ":bin:", CUDA_HOME="/before")
    return cases, canary, env


def known_roots(host):
    return {"", "/before"} | {str(host.path("/usr/local/cuda-" + v)) for v in ("13.0", "13.1", "12.4")} | {
        item for item in host.list_json()}


def check_hook_env(case, env):
    project, kind, shape = case
    try:
        proc = subprocess.run([CUDASWITCH, "hook-env", "--shell", "bash"], capture_output=True, env=env,
                              cwd=project, timeout=CASE_LIMIT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return "%s (%s, %s): hook-env hung" % (project.name, kind, shape)
    out, err = proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")
    problems = []
    if "Traceback" in err or proc.returncode not in (0, 1):
        problems.append("rc %d: %s" % (proc.returncode, err[-300:]))
    if proc.returncode != 0 and out:
        problems.append("stdout on a refusal: %r" % out[:80])
    if err.count("\n") > 1:
        problems.append("more than one line on stderr: %r" % err[:200])
    if SECRET[:12] in err:
        problems.append("the secret reached stderr")
    if str(project) in out.replace(str(project / kind), ""):
        problems.append("a path inside the repo in the output")
    return "%s (%s, %s): %s" % (project.name, kind, shape, "; ".join(problems)) if problems else None


def test_corpus_through_hook_env(corpus):
    cases, canary, env = corpus
    assert len(cases) >= SIZE
    with ThreadPoolExecutor(max_workers=2) as pool:
        failures = [f for f in pool.map(lambda c: check_hook_env(c, env), cases) if f]
    assert failures == []
    assert not canary.exists(), canary.read_text()


QUOTE = {"bash": bash.quote, "zsh": zsh.quote, "fish": fish.quote}
STEP = {
    "bash": 'cd -- {dir} && __cudaswitch_hook\nprintf "\\nCASE {i} H=<%s>\\n" "${{CUDA_HOME-}}"\n',
    "zsh": 'cd -- {dir} && __cudaswitch_hook\nprintf "\\nCASE {i} H=<%s>\\n" "${{CUDA_HOME-}}"\n',
    "fish": 'cd {dir}; and __cudaswitch_hook\nprintf "\\nCASE {i} H=<%s>\\n" "$CUDA_HOME"\n',
}
ARGV = {"bash": ["--norc", "--noprofile", "-s"], "zsh": ["-f", "-s"], "fish": ["--no-config"]}


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_corpus_through_the_real_hooks(standard_host, corpus, shell, tmp_path):
    """The whole corpus is split over the three shells, so each run puts SIZE cases through hooks."""
    cases, canary, env = corpus
    share = [(i, c) for i, c in enumerate(cases) if i % 3 == ("bash", "zsh", "fish").index(shell)]
    script = ('eval "$(%s init %s)"\n' % (CUDASWITCH, shell) if shell != "fish"
              else "%s init fish | source\n" % CUDASWITCH)
    script += "".join(STEP[shell].format(dir=QUOTE[shell](str(project)), i=i) for i, (project, _, _) in share)
    errors = tmp_path / "stderr"
    with open(errors, "wb") as err:
        proc = subprocess.Popen([shell_path(shell)] + ARGV[shell], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=err, env=env, cwd=str(tmp_path), start_new_session=True)
        proc.stdin.write(script.encode())
        proc.stdin.close()
        seen = read_cases(proc, [i for i, _ in share])
    roots = known_roots(standard_host)
    stray = {i: home for i, home in seen.items() if home not in roots}
    assert stray == {}
    text = errors.read_text(errors="replace")
    assert "Traceback" not in text and SECRET[:12] not in text
    assert not canary.exists(), canary.read_text()


def read_cases(proc, indexes):
    """{case index: CUDA_HOME after it}, failing on the first case that takes more than 5 s."""
    seen, buffer, pending = {}, b"", list(indexes)
    deadline = time.monotonic() + CASE_LIMIT * 4  # loading the hook and the first case's registry load
    try:
        while pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError("case %d did not finish within %g s" % (pending[0], CASE_LIMIT))
            ready, _, _ = select.select([proc.stdout], [], [], remaining)
            chunk = os.read(proc.stdout.fileno(), 65536) if ready else b""
            if ready and not chunk:
                raise AssertionError("the shell exited before case %d" % pending[0])
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                if line.startswith(b"CASE "):
                    index, _, home = line.decode("utf-8", "replace")[5:].partition(" H=<")
                    seen[int(index)] = home[:-1]
                    pending.remove(int(index))
                    deadline = time.monotonic() + CASE_LIMIT
    finally:
        proc.kill()
        proc.wait()
    return seen
