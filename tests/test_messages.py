"""Lines a user reads as words: counts agree with their nouns ("1 report refused", "2 errors",
never "1 reports" or "report(s)"), hints name things a user knows rather than a check's internal
id, and `list`'s legend explains marks only where a person sees them."""

import os
import pty
import re
import subprocess

from cudaswitch.verify import pipeline, present
from tests import kits
from tests.conftest import CUDASWITCH, Host

# "1 errors", "2 error,", "1 reports", "report(s)": a count that disagrees with its noun
WRONG_NUMBER = re.compile(r"\b1 (errors|warnings|reports|hosts|nodes|toolkits)\b|\b([02-9]|\d\d+) (error|warning|"
                          r"report|host|node|toolkit)\b|\(s\)")


def _report(base, name):
    root = base / name
    kits.install_classic_runtime12(root / "usr/local/cuda-12.4")
    (root / "etc").mkdir(parents=True)
    (root / "etc/hostname").write_text(name + "\n")
    proc = Host(root, base / "work").run("audit", "--json", "--root", str(root), check=True)
    path = base / (name + ".json")
    path.write_text(proc.stdout)
    return path


def test_audit_merge_counts_one_refused_report_in_the_singular(tmp_path):
    """A collection of one good report and one truncated one: merge said "1 hosts merged, 1 reports
    refused" and, with the skew report, "1 report(s) refused"."""
    good = _report(tmp_path, "node01")
    broken = tmp_path / "node02.json"
    broken.write_text(good.read_text()[:40])
    runner = Host(tmp_path / "node01", tmp_path / "work")
    proc = runner.run("audit", "merge", str(good), str(broken))
    assert proc.returncode == 0, proc.stderr
    assert "1 host merged, 1 report refused" in proc.stdout, proc.stdout
    assert not WRONG_NUMBER.search(proc.stdout + proc.stderr), proc.stdout + proc.stderr
    strict = runner.run("audit", "merge", "--strict", str(good), str(broken))
    assert strict.returncode == 1 and "1 report refused" in strict.stdout + strict.stderr
    assert not WRONG_NUMBER.search(strict.stdout + strict.stderr), strict.stdout + strict.stderr


def test_the_verify_summary_counts_in_words():
    checks = [{"level": level} for level in ("error", "error", "warning", "info", "info", "ok")]
    assert present.summary_line(checks) == "summary: 2 errors, 1 warning, 2 info, 1 ok"
    assert present.summary_line([{"level": "error"}]) == "summary: 1 error"


def test_build_hints_name_no_internal_check_id():
    """A build that failed with nvcc's "unsupported GNU version" said "-> see gcc.supported", a check
    id no page explains; the hint says what to do."""
    hint = pipeline._build_hint("error -- unsupported GNU version! gcc versions later than 13 are not supported!")
    assert "gcc.supported" not in hint and "gcc-N" in hint
    source = open(pipeline.__file__).read()
    assert "see gcc.supported" not in source


def test_list_prints_its_legend_only_where_a_person_sees_the_marks(tmp_path):
    """`cudaswitch list > file` (or into a pipe) printed "* active in this shell, d default" on the
    terminal, explaining marks it had not shown there; on a terminal the legend stays."""
    host = Host(tmp_path / "root", tmp_path / "work")
    kits.install_classic(kits.cuda13("13.0"), host.path("/usr/local/cuda-13.0"), "13.0")
    host.run("global", "13.0", check=True)
    piped = host.run("list", check=True)
    assert "13.0" in piped.stdout and "default" not in piped.stderr, piped.stderr
    master, slave = pty.openpty()
    try:
        proc = subprocess.run([CUDASWITCH, "list"], stdout=slave, stderr=subprocess.PIPE, env=host.env,
                              timeout=120, cwd=str(host.work), stdin=subprocess.DEVNULL)
    finally:
        os.close(slave)
        os.close(master)
    assert proc.returncode == 0 and b"d default" in proc.stderr, proc.stderr

