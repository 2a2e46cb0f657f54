"""Host lists as pdsh and Slurm write them (`node[01-64,70]`): expanded for `--nodes`, folded in
every node list the merge prints; and the merge options' bad values, one line each."""

import subprocess

from hypothesis import given, settings, strategies as st

from cudaswitch.audit.hosts import expand, fold
from tests.conftest import CUDASWITCH


def test_expand_as_pdsh_does():
    assert expand("node[01-03,07],gpu[8-10]x,login") == ["node01", "node02", "node03", "node07",
                                                          "gpu8x", "gpu9x", "gpu10x", "login"]
    assert expand("rack[1-2]-n[1-2]") == ["rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"]


def test_pdsh_expands_the_same_list():
    """The oracle is pdsh itself: `pdsh -R exec -w LIST echo %h` runs once per node it expanded."""
    from tests import kits

    hostlist = "node[01-03,07],gpu[8-10]x,login,rack[1-2]-n[1-2]"
    proc = subprocess.run([kits.require("pdsh"), "-R", "exec", "-N", "-w", hostlist, "echo", "%h"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert sorted(proc.stdout.split()) == sorted(expand(hostlist))


@settings(max_examples=200, deadline=None)
@given(st.sets(st.tuples(st.sampled_from(["node", "gpu", "n-", "login"]), st.integers(0, 300),
                         st.sampled_from([1, 2, 3, 5])), min_size=1, max_size=60))
def test_fold_then_expand_gives_the_same_nodes(items):
    names = {"%s%s" % (prefix, str(number).zfill(width)) for prefix, number, width in items}
    assert sorted(expand(fold(names))) == sorted(names)


def test_fold_writes_ranges():
    assert fold(["node%02d" % n for n in range(1, 65) if n not in (7, 33)]) == "node[01-06,08-32,34-64]"
    assert fold(["node07"]) == "node07" and fold(["b", "a"]) == "a,b"


def test_bad_option_values_are_one_line_and_nothing_on_stdout():
    for args, says in [(["--require", "cuda"], "--require cuda: expected KEY=VERSION"),
                       (["--require", "gpu=1"], "--require gpu=1: expected KEY=VERSION"),
                       (["--require", "cuda=12." + "9" * 5000], "expected KEY=VERSION"),
                       (["--same", "colour"], "--same colour: expected one of"),
                       (["--nodes", "node[1-x]"], "has a range that is not N or N-M"),
                       (["--nodes", "node[1-99999999]"], "empty or too large"),
                       (["--nodes", "a[1-999]b[1-999]c[1-999]"], "names more than"),
                       (["--nodes", "node[01-"], "is not one pdsh would read"),
                       (["--nodes", "n[1]" * 5000], "more than 1000 [ranges]")]:
        proc = subprocess.run([CUDASWITCH, "audit", "merge", *args], input="{}\n", capture_output=True,
                              text=True, timeout=60)
        assert proc.returncode == 2 and proc.stdout == "", (args, proc.stderr)
        [line] = proc.stderr.splitlines()
        assert says in line and len(line) < 300, line
