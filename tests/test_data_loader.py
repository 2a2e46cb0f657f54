"""Every fact once, with its source: the real loader (verify/facts.load_tables) over a copy of the
shipped data with one mistake a maintainer could make while editing it (a fact stated twice, a
source key nobody defined, a table nothing reads, a source without where or when, a rule naming a
check that does not exist) refuses it with one line naming the file. Pure unit checks: the loader
is what every command calls first."""

import shutil
from importlib import resources

import pytest

from cudaswitch.verify import checkregistry, checkset, facttables as facts  # noqa: F401  (checkset fills the registry)

RULE_IDS = checkregistry.ids_for("explain")


@pytest.fixture
def data(tmp_path):
    """A copy of the shipped sources.toml, compat.toml and torch_builds.toml to edit."""
    for name in facts.DATA_FILES:
        shutil.copy(str(resources.files("cudaswitch.data").joinpath(name)), tmp_path / name)
    return tmp_path


def edit(data, name, old, new):
    path = data / name
    text = path.read_text(encoding="utf-8")
    assert text.count(old) >= 1, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def refused(data):
    with pytest.raises(facts.TableError) as caught:
        facts.load_tables(data, rule_ids=RULE_IDS)
    message = caught.value.message
    assert "\n" not in message
    return message


def test_the_shipped_data_loads(data):
    tables = facts.load_tables(data, rule_ids=RULE_IDS)
    assert tables["compat"]["driver_minimum"] and tables["torch"]["build"] and len(tables["sources"]) > 10
    assert "torch_build" not in tables["compat"] and "cudnn" not in tables["compat"]  # one torch table, no dead rows
    assert all(s.get("url") or s.get("path") for s in tables["sources"].values())


def test_a_driver_minimum_stated_twice_is_refused(data):
    edit(data, "compat.toml", '[[driver_minimum]]\ncuda = "12.4"\ndriver = "550.54.14"\nsource = "NV-rn"\n',
         '[[driver_minimum]]\ncuda = "12.4"\ndriver = "550.54.14"\nsource = "NV-rn"\n'
         '[[driver_minimum]]\ncuda = "12.4"\ndriver = "550.40.07"\nsource = "NV-rn"\n')
    message = refused(data)
    assert "compat.toml [[driver_minimum]]" in message and "cuda 12.4" in message


def test_an_architecture_in_two_rows_is_refused(data):
    edit(data, "compat.toml", 'sm = ["75"]', 'sm = ["75", "86"]')
    assert "[[arch]]" in refused(data) and "86" in refused(data)


def test_a_torch_build_stated_twice_is_refused(data):
    edit(data, "torch_builds.toml", '[[build]]\ntorch = "1.12"\ncuda = "11.3"\n',
         '[[build]]\ntorch = "1.12"\ncuda = "11.3"\nplatform = "linux-x86_64"\nevidence = "none"\nsource = "PT-rel"\n'
         '[[build]]\ntorch = "1.12"\ncuda = "11.3"\n')
    assert "repeats torch 1.12 CUDA 11.3" in refused(data)


def test_overlapping_gcc_ceilings_are_refused(data):
    edit(data, "compat.toml", 'cuda_from = "12.4"\ncuda_to = "12.6"', 'cuda_from = "12.3"\ncuda_to = "12.6"')
    assert "[[gcc_ceiling]]" in refused(data) and "overlap" in refused(data)


def test_an_unknown_source_key_is_refused(data):
    edit(data, "compat.toml", 'source = "LLVM"', 'source = "a-forum-post"')
    message = refused(data)
    assert "'a-forum-post'" in message and "sources.toml does not define" in message


def test_an_unknown_source_in_the_torch_table_is_refused(data):
    edit(data, "torch_builds.toml", 'source = "uv-14742"', 'source = "uv-99999"')
    assert "'uv-99999'" in refused(data)


def test_a_second_sources_list_is_refused(data):
    """The sources live in sources.toml only: a [sources] table in another file is read by nothing."""
    edit(data, "compat.toml", "[[driver_minimum]]", '[sources]\nPT-rel = "another wording"\n\n[[driver_minimum]]')
    assert "table [sources] is read by nothing" in refused(data)


def test_an_unused_table_is_refused(data):
    compat = data / "compat.toml"
    compat.write_text(compat.read_text() + '\n[[cudnn]]\ncudnn = "9"\nsource = "cuDNN"\n')
    assert "compat.toml: table [cudnn] is read by nothing" in refused(data)


def test_a_source_no_row_names_is_refused(data):
    (data / "sources.toml").write_text((data / "sources.toml").read_text() +
                                       '\n[NV-fa]\ntitle = "CUDA features archive"\nurl = "https://x"\n'
                                       'retrieved = "2026-12"\n')
    assert "NV-fa is named by no row" in refused(data)


@pytest.mark.parametrize("old,new,words", [
    ('url = "https://github.com/astral-sh/uv/issues/14742"\n', "", "neither a url nor a path"),
    ('retrieved = "2026-12-01"', 'retrieved = "last year"', "no retrieval date"),
])
def test_a_source_says_where_and_when(data, old, new, words):
    edit(data, "sources.toml", old, new)
    assert words in refused(data)


def test_a_rule_naming_an_unknown_check_is_refused(data):
    """explain's rules name registry ids: a third vocabulary (torch_driver) stops the load."""
    rule = 'checks = ["driver.present", "driver.problem", "driver.supports_toolkit", "torch.driver", "driver.wsl"]'
    edit(data, "compat.toml", rule, 'checks = ["driver.present", "torch_driver"]')
    message = refused(data)
    assert "names check torch_driver" in message and "driver_too_old" in message
