"""`use module:13.0` goes through the module system, as the user who writes `module:` asks: real
Lmod and real Environment Modules 5 load cuda/13.0 (`module list` shows it; CPATH and
CMAKE_PREFIX_PATH are what the modulefile sets), `off` unloads it and `module list` shows the
starting list again, the module system's own variables byte-equal. A second `use` of another
toolkit unloads it first. Without a module system in the shell, one line says the module is not
loaded and the switch goes by the variables alone."""

import json

import pytest

from tests.test_coexist_modules import DUMP, LIST, USE, run, site  # noqa: F401 (site: the fixture)
from tests.test_module_account import ACCOUNT, accounts


def module_lists(proc):
    return [line[5:].strip() for line in proc.stdout.splitlines() if line.startswith("LIST ")]


@pytest.mark.parametrize("system", ["lmod", "envmodules"])
def test_use_module_loads_it_and_off_unloads_it(site, system):  # noqa: F811 (the fixture)
    host, a, b, base = site
    dumps, lists, _, proc = run(site, system, [
        DUMP, LIST, ACCOUNT,
        USE % "use module:13.0", DUMP, LIST,
        USE % "off", DUMP, LIST, ACCOUNT])
    start, used, after = dumps
    assert "cuda/13.0" not in lists[0]
    assert "cuda/13.0" in lists[1], proc.stderr  # module list tells the truth
    assert used["CUDA_HOME"] == a
    assert a + "/include" in (used["CPATH"] or "").split(":")  # as the modulefile sets them
    assert a in (used["CMAKE_PREFIX_PATH"] or "").split(":")
    assert "cudaswitch: loaded module cuda/13.0 (`off` unloads it)" in proc.stderr
    assert "cuda/13.0" not in lists[2] and lists[2] == lists[0]
    assert "cudaswitch: unloading module cuda/13.0" in proc.stderr
    for name in ("PATH", "CPATH", "CMAKE_PREFIX_PATH", "CUDA_HOME", "CUDASWITCH_STATE", "LOADEDMODULES", "MODULEPATH"):
        assert after[name] == start[name], name
    before_account, after_account = accounts(proc)
    assert after_account == before_account


def test_use_module_then_another_toolkit_unloads_it_first(site):  # noqa: F811 (the fixture)
    host, a, b, base = site
    dumps, lists, _, proc = run(site, "lmod", [
        DUMP, LIST, USE % "use module:13.0", LIST, USE % "use 13.1", DUMP, LIST, USE % "off", DUMP, LIST])
    start, switched, after = dumps
    assert "cuda/13.0" in lists[1]
    assert "cuda/13.0" not in lists[2] and switched["CUDA_HOME"] == b  # no module claims 13.0 now
    assert not any(e.startswith(a) for e in (switched["CPATH"] or "").split(":") if e)
    assert lists[3] == lists[0] and after["LOADEDMODULES"] == start["LOADEDMODULES"]
    assert after["PATH"] == start["PATH"]


def test_use_module_of_the_loaded_module_loads_nothing_more(site):  # noqa: F811 (the fixture)
    """cuda/13.0 is loaded already: `use module:13.0` switches to it, `off` leaves it loaded."""
    dumps, lists, _, proc = run(site, "lmod", [
        "module load cuda/13.0", LIST, USE % "use module:13.0", LIST, USE % "off", LIST])
    assert "cuda/13.0" in lists[0] and "cuda/13.0" in lists[1] and "cuda/13.0" in lists[2]
    assert "loaded module" not in proc.stderr


def test_a_project_file_module_request_only_selects(site, tmp_path):  # noqa: F811 (the fixture)
    """.cudaversion `module:13.0` switches on cd without running the module system (nothing but
    cudaswitch runs for a project file): `module list` stays as it was."""
    host, a, b, base = site
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".cudaversion").write_text("module:13.0\n")
    dumps, lists, _, proc = run(site, "lmod", [
        LIST, "cd %s" % repo, 'eval "$(cudaswitch hook-env --shell bash)"', DUMP, LIST])
    [inside] = dumps
    assert inside["CUDA_HOME"] == a and lists[1] == lists[0]


def test_without_a_module_system_one_line_says_so(site, tmp_path):  # noqa: F811 (the fixture)
    """MODULEPATH is set but no Lmod or Modules command is (a shell whose rc file skipped the
    module init; the registry reads the modulefiles as text): the switch is made, and one line
    says the module was not loaded."""
    host, a, b, base = site
    config = tmp_path / "config"
    config.mkdir()
    (config / "config.toml").write_text("probe_exec = false\n")
    env = {k: v for k, v in host.env.items() if not k.startswith(("LMOD", "MODULES"))}
    env.update({"MODULEPATH": str(base / "lua"), "CUDASWITCH_CONFIG_DIR": str(config),
                "CUDASWITCH_CACHE_DIR": str(tmp_path / "cache")})
    from tests.shellrun import script

    proc = script("bash", [USE % "use module:13.0", DUMP], env)
    assert proc.returncode == 0, proc.stderr
    [dump] = [json.loads(line[4:]) for line in proc.stdout.splitlines() if line.startswith("DUMP")]
    assert dump["CUDA_HOME"] == a
    said = [line for line in proc.stderr.splitlines() if "module system" in line]
    assert len(said) == 1 and "cuda/13.0 is not loaded" in said[0], proc.stderr
