"""`use module:13.0; off` under real Lmod, whose load drops a duplicate PATH entry (Lmod keeps one
of each): `off` gives back PATH byte for byte, the duplicate where it was."""

from tests.test_coexist_modules import DUMP, LIST, USE, run, site  # noqa: F401 (site: the fixture)


def test_off_after_use_module_restores_a_duplicate_path_entry(site):  # noqa: F811 (the fixture)
    dumps, lists, _, proc = run(site, "lmod", [
        'export PATH="/opt/site/bin:$PATH:/opt/site/bin"', DUMP, LIST,
        USE % "use module:13.0", DUMP, LIST, USE % "off", DUMP, LIST])
    start, used, after = dumps
    assert start["PATH"].count("/opt/site/bin") == 2
    assert "cuda/13.0" in lists[1], proc.stderr
    assert after["PATH"] == start["PATH"], (start["PATH"], used["PATH"], after["PATH"])
    assert lists[2] == lists[0]
