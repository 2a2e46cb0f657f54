"""cudaswitch.run, the one way cudaswitch starts a child: real children (sh, python), each rule
checked from the child's side (what its cwd, PATH and sys.path really were)."""

import ast
import os
import pathlib
import sys

from cudaswitch import run

PACKAGE = pathlib.Path(run.__file__).parent


def test_every_child_process_goes_through_the_runner():
    """subprocess (and os.system/popen/spawn) appears in cudaswitch/run.py only; `exec` replacing
    cudaswitch with the user's own command is the one other way a program starts."""
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "os":
                names = ["os." + node.attr] if node.attr in ("system", "popen", "spawnv", "spawnvp", "fork") else []
            if any(n.split(".")[0] in ("subprocess", "multiprocessing") or n.startswith("os.") for n in names):
                offenders.append("%s:%d" % (path.relative_to(PACKAGE), node.lineno))
    assert [o for o in offenders if not o.startswith("run.py:")] == []


def test_child_gets_a_private_cwd_and_only_absolute_path_entries(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    env = {"PATH": ".:bin::" + os.environ["PATH"] + ":rel/dir:", "HOME": "/root"}
    result = run.run(["sh", "-c", 'pwd; printf "%s\\n" "$PATH"; ls -A'], env=env, timeout=30)
    cwd, path, listing = result.stdout.decode().split("\n", 2)
    assert result.ok and cwd != str(tmp_path) and os.path.basename(cwd).startswith("cudaswitch-run-")
    assert listing == ""  # empty: nothing of the project is beside the child
    assert all(d.startswith("/") for d in path.split(":")) and path.startswith(os.environ["PATH"].split(":")[0])
    assert not os.path.exists(cwd)  # removed after the run


def test_python_child_never_has_a_project_dir_on_sys_path(tmp_path, monkeypatch):
    (tmp_path / "json.py").write_text("raise SystemExit('imported the project json.py')\n")
    monkeypatch.chdir(tmp_path)
    result = run.run([sys.executable, "-c", "import json, sys; print(json.dumps(sys.path))"],
                     env=dict(os.environ, PYTHONPATH="."), timeout=60)
    assert result.ok, result.stderr
    assert str(tmp_path) not in result.stdout.decode()


def test_a_hung_child_and_its_whole_group_die_at_the_deadline(tmp_path):
    pidfile = tmp_path / "grandchild"
    script = "sleep 300 & echo $! > %s; wait" % pidfile
    result = run.run(["sh", "-c", script], timeout=1)
    assert result.returncode is None and result.timed_out
    assert result.error == "sh did not answer within 1 s"
    pid = int(pidfile.read_text())
    try:  # killed (a zombie reaped by init at most)
        with open("/proc/%d/stat" % pid) as handle:
            assert handle.read().split()[2] in ("Z", "X")
    except FileNotFoundError:
        pass


def test_a_grandchild_holding_the_pipes_does_not_keep_us_waiting():
    result = run.run(["sh", "-c", "(sleep 300 &) ; echo done"], timeout=120)
    assert result.ok and result.stdout == b"done\n"


def test_output_is_read_to_a_cap_and_the_rest_dropped():
    result = run.run(["sh", "-c", "head -c 50000000 /dev/zero; echo tail >&2"], timeout=120, max_output=1000)
    assert result.ok and len(result.stdout) == 1000 and result.stderr == b"tail\n"


def test_a_program_that_is_not_there_is_one_line():
    result = run.run(["/nonexistent/nvcc", "--version"], timeout=5)
    assert result.returncode is None and not result.timed_out
    assert result.error == "cannot run /nonexistent/nvcc: No such file or directory"


def test_lines_stream_as_they_come():
    seen = []
    result = run.run(["sh", "-c", "echo one; echo two >&2; printf three"], timeout=30, merge_stderr=True,
                     on_line=seen.append)
    assert result.ok and seen == ["one", "two", "three"]
