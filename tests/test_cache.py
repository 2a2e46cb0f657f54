"""cache.parsed: a data table parsed once per state of its files. Mirrors `cudaswitch torch`
reading torch_builds.toml on every run: the second run takes the parse from the cache, and an
edited table (another size or mtime) is parsed again, never served stale. Pure unit tests: the
function runs in-process against files in tmp."""

import os
import tomllib

from cudaswitch import cache


def counting_parser(path, calls):
    def parse():
        calls.append(path)
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    return parse


def test_second_read_is_cached_and_an_edit_is_seen(tmp_path):
    table = tmp_path / "builds.toml"
    table.write_text('[[build]]\ntorch = "2.9"\ncuda = "13.0"\n')
    calls = []
    parse = counting_parser(table, calls)
    (tmp_path / "cache").mkdir()
    first = cache.parsed(str(tmp_path / "cache"), "t.marshal", [str(table)], parse)
    again = cache.parsed(str(tmp_path / "cache"), "t.marshal", [str(table)], parse)
    assert first == again == {"build": [{"torch": "2.9", "cuda": "13.0"}]} and len(calls) == 1
    table.write_text('[[build]]\ntorch = "2.10"\ncuda = "13.0"\n')
    stamp = os.stat(table).st_mtime_ns
    os.utime(table, ns=(stamp + 10**9, stamp + 10**9))
    edited = cache.parsed(str(tmp_path / "cache"), "t.marshal", [str(table)], parse)
    assert edited["build"][0]["torch"] == "2.10" and len(calls) == 2


def test_no_cache_dir_is_made_for_it(tmp_path):
    """A command that caches nothing else (an image audit refused in one line) leaves no trace."""
    table = tmp_path / "t.toml"
    table.write_text("a = 1\n")
    calls = []
    for _ in range(2):
        assert cache.parsed(str(tmp_path / "cache"), "t.marshal", [str(table)], counting_parser(table, calls)) \
            == {"a": 1}
    assert len(calls) == 2 and not (tmp_path / "cache").exists()


def test_a_result_marshal_cannot_hold_is_parsed_every_time(tmp_path):
    """A TOML date is a datetime.date: no cache, the same answer."""
    table = tmp_path / "dated.toml"
    table.write_text("retrieved = 2026-12-01\n")
    calls = []
    parse = counting_parser(table, calls)
    for _ in range(2):
        assert str(cache.parsed(str(tmp_path / "cache"), "d.marshal", [str(table)], parse)["retrieved"]) == \
            "2026-12-01"
    assert len(calls) == 2


def test_a_damaged_cache_or_a_missing_file_is_parsed_again(tmp_path):
    table = tmp_path / "t.toml"
    table.write_text("a = 1\n")
    calls = []
    parse = counting_parser(table, calls)
    (tmp_path / "cache").mkdir()
    cache.parsed(str(tmp_path / "cache"), "t.marshal", [str(table)], parse)
    (tmp_path / "cache" / "t.marshal").write_bytes(b"\x00" * 64)
    assert cache.parsed(str(tmp_path / "cache"), "t.marshal", [str(table)], parse) == {"a": 1}
    assert len(calls) == 2
    gone = str(tmp_path / "absent.toml")
    assert cache.parsed(str(tmp_path / "cache"), "t.marshal", [str(table), gone], parse) == {"a": 1}
    assert len(calls) == 3
