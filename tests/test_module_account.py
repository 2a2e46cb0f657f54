"""The module system's own account of a shell is byte-equal after `use` and `off`: with cuda/13.0
loaded by real Lmod (and real Environment Modules 5), `eval "$(cudaswitch use 13.1)"; eval
"$(cudaswitch off)"` leaves every variable the module system keeps (Lmod's _ModuleTable00N_,
__LMOD_REF_COUNT_*, LMOD_FAMILY_*; Modules' __MODULES_*; LOADEDMODULES, _LMFILES_, MODULEPATH)
as `env` showed it before; cudaswitch's marker modulefile dir used to stay in _ModuleTable001_
and __LMOD_REF_COUNT_MODULEPATH until the next module command. After a module command of the
user's in between, the module system's own answer stands."""

import json

import pytest

from tests.test_coexist_modules import USE, run, site  # noqa: F401 (site: the fixture)

ACCOUNT = ("python3 -c 'import os, json; print(\"ACCT\" + json.dumps({n: v for n, v in os.environ.items() "
           "if n in (\"LOADEDMODULES\", \"_LMFILES_\", \"MODULEPATH\") "
           "or n.startswith((\"_ModuleTable\", \"__LMOD_\", \"LMOD_FAMILY_\", \"__MODULES_\"))}, sort_keys=True))'")


def accounts(proc):
    return [json.loads(line[4:]) for line in proc.stdout.splitlines() if line.startswith("ACCT")]


@pytest.mark.parametrize("system", ["lmod", "envmodules"])
def test_use_then_off_leaves_the_module_account_byte_equal(site, system):  # noqa: F811 (the fixture)
    *_, proc = run(site, system, ["module load cuda/13.0", ACCOUNT, USE % "use 13.1", ACCOUNT,
                                  USE % "off", ACCOUNT, "module list 2>&1"])
    before, switched, after = accounts(proc)
    assert before.get("LOADEDMODULES") == "cuda/13.0"
    assert switched != before  # the swap is real: the module system shows cuda/cudaswitch
    assert after == before
    assert "cuda/13.0" in proc.stdout.split("ACCT")[-1]  # and `module list` agrees


@pytest.mark.parametrize("system", ["lmod", "envmodules"])
def test_use_twice_then_off_is_byte_equal_too(site, system):  # noqa: F811 (the fixture)
    *_, proc = run(site, system, ["module load cuda/13.0", ACCOUNT, USE % "use 13.1", USE % "use 13.0",
                                  USE % "off", ACCOUNT])
    before, after = accounts(proc)
    assert after == before


def test_a_module_command_in_between_is_the_module_systems_answer(site):  # noqa: F811 (the fixture)
    """`module use DIR` while switched: off keeps DIR (the user's doing), so the account is not the old one."""
    host, a, b, base = site
    extra = base / "extra"
    extra.mkdir(exist_ok=True)
    *_, proc = run(site, "lmod", ["module load cuda/13.0", ACCOUNT, USE % "use 13.1", "module use %s" % extra,
                                  USE % "off", ACCOUNT])
    before, after = accounts(proc)
    assert str(extra) in after["MODULEPATH"] and after["LOADEDMODULES"] == "cuda/13.0"
    assert "cudaswitch" not in after["MODULEPATH"]
