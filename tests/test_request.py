"""Requests as the README defines them (parsing, selection among records) and the XDG dirs of paths.py.

Unit tests: requests and selection are pure data; the CLI-level behaviour (`which`, not-found
messages) is in test_registry_host.py against real toolkits."""

import os

import platformdirs
import pytest

from cudaswitch.errors import BadRequest
from cudaswitch.paths import Paths
from cudaswitch.request import SOURCES, ToolkitRequest, select


@pytest.mark.parametrize("text, kind, value, source", [
    ("12", "version", (12,), None),
    ("12.4", "version", (12, 4), None),
    ("12.4.131", "version", (12, 4, 131), None),
    (" 12.4 ", "version", (12, 4), None),  # a .cudaversion line keeps its spaces
    ("latest", "latest", None, None),
    ("system", "system", None, None),
    ("conda:12.1", "version", (12, 1), "conda"),
    ("module:12", "version", (12,), "module"),
    ("pip:latest", "latest", None, "pip"),
])
def test_parse_accepts_the_request_forms(text, kind, value, source):
    request = ToolkitRequest.parse(text)
    assert (request.kind, request.value, request.source) == (kind, value, source)
    assert request.text == text


def test_parse_specifier_keeps_pep440_meaning():
    request = ToolkitRequest.parse(">=12.1,<12.6")
    assert request.kind == "specifier"
    assert [v for v in ("12.0.140", "12.1.105", "12.5.82", "12.6.20") if request.value.contains(v)] == \
        ["12.1.105", "12.5.82"]


@pytest.mark.parametrize("text", [
    "banana", "$(rm -rf)", "`id`", "12; rm -rf /", "foo:12", ":12", "conda:", "conda:banana", "",
    "   ", "12\n13", "12\x00", "\x1b[31m12", "12.4.131.7", "12.", ".12", ">=banana", "1" * 300,
    "/usr/local/cuda-12.4",  # paths only where the caller allows them (the command line)
])
def test_parse_rejects_bad_requests_with_bad_request(text):
    with pytest.raises(BadRequest) as info:
        ToolkitRequest.parse(text)
    message = info.value.render()
    assert message.startswith("cudaswitch: error: ") and "\n" not in message


def test_parse_path_only_when_allowed(tmp_path):
    request = ToolkitRequest.parse(str(tmp_path), allow_path=True)
    assert (request.kind, request.value) == ("path", os.path.realpath(tmp_path))


def record(version, *sources, status="ok", real=None):
    real = real or "/r/%s-%s" % (version, "-".join(sources))
    return {"version": version, "sources": list(sources), "status": status, "real": real, "root": real}


RECORDS = [
    record("13.1.115", "system", "module"),
    record("13.0.88", "pip"),
    record("13.0.88", "conda"),
    record("13.0.88", "system", real="/usr/local/cuda-13.0"),
    record("12.6.85", "system", status="broken"),
    record("12.4.131", "system", status="incomplete"),
    record("12.4.99", "conda"),
]


@pytest.mark.parametrize("text, expected", [
    ("13", "13.1.115"),            # the newest 13.x
    ("12", "12.4.99"),             # 12.6 is broken, 12.4.131 cannot compile: a partial request wants one that can
    ("12.4", "12.4.131"),          # exact: highest patch wins over source order, complete or not
    ("12.4.99", "12.4.99"),
    (">=13.0,<13.1", "13.0.88"),
    ("latest", "13.1.115"),
    ("conda:12", "12.4.99"),
    ("module:13.1", "13.1.115"),
])
def test_select_picks_the_highest_matching_version(text, expected):
    assert select(ToolkitRequest.parse(text), RECORDS, SOURCES)["version"] == expected


def test_select_breaks_ties_by_source_order():
    request = ToolkitRequest.parse("13.0")
    assert select(request, RECORDS, SOURCES)["sources"] == ["system"]  # default: system before conda, pip
    conda_first = ["conda", "pip", "user", "managed", "system", "module"]
    assert select(request, RECORDS, conda_first)["sources"] == ["conda"]
    assert select(request, list(reversed(RECORDS)), ["pip", "conda", "system"])["sources"] == ["pip"]


def test_release_name_from_version_json_selects_its_toolkit():
    """NVIDIA names releases 12.4.1 (cuda_12.4.1_550.54.15_linux.run) while nvcc says 12.4.131:
    a user who types the release name gets that toolkit; 12.4.1 never matches 12.4.131 otherwise."""
    release = dict(record("12.4.131", "system"), components={"cuda": "12.4.1", "cuda_nvcc": "12.4.131"})
    other = record("12.4.99", "conda")
    assert select(ToolkitRequest.parse("12.4.1"), [release, other], SOURCES) is release
    assert select(ToolkitRequest.parse("12.4.1"), [other], SOURCES) is None


def test_select_system_and_no_match():
    assert select(ToolkitRequest.parse("system"), RECORDS, SOURCES, "/usr/local/cuda-13.0")["version"] == "13.0.88"
    assert select(ToolkitRequest.parse("system"), RECORDS, SOURCES, None) is None
    assert select(ToolkitRequest.parse("11.8"), RECORDS, SOURCES) is None
    assert select(ToolkitRequest.parse("pip:12"), RECORDS, SOURCES) is None


# ---------------------------------------------------------------- XDG dirs (paths.py computes them
# itself to stay off platformdirs' import cost; they must be platformdirs' answers)

XDG = ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME")


def platformdirs_answer():
    return (platformdirs.user_config_dir("cudaswitch"), platformdirs.user_cache_dir("cudaswitch"),
            platformdirs.user_data_dir("cudaswitch"))


def paths_answer():
    paths = Paths(dict(os.environ))
    return (paths.config_dir, paths.cache_dir, paths.data_dir)


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for var in XDG + ("CUDASWITCH_CONFIG_DIR", "CUDASWITCH_CACHE_DIR", "CUDASWITCH_DATA_DIR"):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def test_xdg_defaults_equal_platformdirs(clean_env, tmp_path):
    home = str(tmp_path / "home")
    assert paths_answer() == platformdirs_answer() == (
        home + "/.config/cudaswitch", home + "/.cache/cudaswitch", home + "/.local/share/cudaswitch")


@pytest.mark.parametrize("value", ["{tmp}/x{n}", "{tmp}/with space/x{n}/", ""])
def test_xdg_vars_equal_platformdirs(clean_env, tmp_path, value):
    for n, var in enumerate(XDG):
        clean_env.setenv(var, value.format(tmp=tmp_path, n=n))
    assert paths_answer() == platformdirs_answer()


def test_xdg_relative_value_is_ignored_as_the_spec_says(clean_env, tmp_path):
    for var in XDG:
        clean_env.setenv(var, "relative/dir")
    assert paths_answer()[0] == str(tmp_path / "home/.config/cudaswitch")


def test_cudaswitch_vars_override_xdg(clean_env, tmp_path):
    clean_env.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    clean_env.setenv("CUDASWITCH_CONFIG_DIR", str(tmp_path / "mine"))
    assert Paths(dict(os.environ)).config_file == str(tmp_path / "mine/config.toml")


def test_a_partial_request_takes_a_pre_release_only_when_nothing_else_matches():
    """`install 13.4 --pre` made a managed 13.4.0rc1 beside a 13.1 release: `latest` and `13` keep
    the release (as pip does), `13.4` names the rc, and with nothing else installed `13` takes it."""
    release, rc = record("13.1.0", "managed"), record("13.4.0rc1", "managed")
    assert select(ToolkitRequest.parse("latest"), [release, rc], SOURCES) is release
    assert select(ToolkitRequest.parse("13"), [rc, release], SOURCES) is release
    assert select(ToolkitRequest.parse("13.4"), [release, rc], SOURCES) is rc
    assert select(ToolkitRequest.parse("13"), [rc], SOURCES) is rc
