"""config.toml: default toolkit, source order, extra search roots, registered toolkits, timeouts.
Written atomically; a config that cannot be parsed is an error naming the file and line, never
overwritten by a later write."""

import math
import os

from cudaswitch import cache, safeio, settings
from cudaswitch.errors import BadRequest, ConfigError, UsageError
from cudaswitch.request import SOURCES, ToolkitRequest
from cudaswitch.safeio import Unreadable, parse_toml, read_regular, replace_regular
from cudaswitch.settings import MAX_TIMEOUT, VERDICT_MODES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any
    from cudaswitch.paths import Paths

MAX_BYTES = 1 << 20
DEFAULTS = {"source_order": list(SOURCES), "probe_timeout": settings.PROBE_TIMEOUT}


def _text(key: str, value: "Any") -> "str | None":
    if not isinstance(value, str) or not value or "\0" in value or len(value) > 4096:
        return "must be a non-empty string"
    return None


def _strings(key: str, value: "Any") -> "str | None":
    if not isinstance(value, list) or len(value) > 1000:
        return "must be a list of strings"
    bad = [item for item in value if _text(key, item)]
    return "must be a list of non-empty strings (one is %s)" % _kind(bad[0]) if bad else None


def _timeout(key: str, value: "Any") -> "str | None":
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "must be a number of seconds"
    if not (math.isfinite(value) and 0 < value <= MAX_TIMEOUT):
        return "must be between 0 and %g seconds, not %g" % (MAX_TIMEOUT, value)
    return None


def _flag(key: str, value: "Any") -> "str | None":
    return None if isinstance(value, bool) else "must be true or false"


def _request(key: str, value: "Any") -> "str | None":
    problem = _text(key, value)
    if problem:
        return problem
    try:
        ToolkitRequest.parse(value)
    except BadRequest:
        return "is not a toolkit request (e.g. \"12.4\", \"13\", \"latest\")"
    return None


def _sources(key: str, value: "Any") -> "str | None":
    problem = _strings(key, value)
    unknown = [s for s in value if s not in SOURCES] if not problem else []
    if unknown:
        return "names unknown source %s (sources: %s)" % (ascii(unknown[0][:20]), ", ".join(SOURCES))
    return problem


def _verdict(key: str, value: "Any") -> "str | None":
    return None if value in VERDICT_MODES else "must be one of %s" % ", ".join(VERDICT_MODES)


CHECKS = {
    "default": _request,
    "source_order": _sources,
    "search_roots": _strings,
    "toolkits": _strings,
    "probe_timeout": _timeout,
    "python": _text,
    "torch_timeout": _timeout,
    "probe_exec": _flag,
    "redist_url": _text,
    "verdict": _verdict,
    "loader_path": _flag,
}

# What each setting is when config.toml does not say, for `config show`; every number and mode is
# cudaswitch/settings.py's, which the modules that read a setting use too. None: unset, and UNSET
# says what applies.
EFFECTIVE_DEFAULTS = {**{key: None for key in CHECKS}, **DEFAULTS, "search_roots": [], "toolkits": [],
                      "torch_timeout": settings.TORCH_TIMEOUT, "probe_exec": True, **settings.SWITCH_DEFAULTS}
UNSET = {"default": "no default toolkit", "python": "the first python3 on the switched PATH",
         "redist_url": "NVIDIA's server"}
_warned: "set[tuple]" = set()  # (file, key): each unknown key is named once per run, however often config is read


def _kind(value: object) -> str:
    if isinstance(value, str) and "\0" in value:
        return "a string holding a NUL character"
    if isinstance(value, str) and len(value) > 4096:
        return "longer than 4096 characters"
    return {bool: "a boolean", int: "a number", float: "a number", str: "an empty string", list: "a list",
            dict: "a table"}.get(type(value), type(value).__name__)


def _read(paths: "Paths") -> "dict[str, Any]":
    """The file's own keys (no defaults); {} when absent; one-line ConfigError otherwise. Cached per
    change of the file: tomllib's imports alone are more than a fast command's whole budget."""
    path = paths.config_file
    return cache.parsed(paths.cache_dir, "config.marshal", (path, safeio.__file__), lambda: _parse(path))


def _parse(path: str) -> "dict[str, Any]":
    try:
        data = read_regular(path, MAX_BYTES)
    except FileNotFoundError:
        return {}
    except Unreadable as exc:
        raise ConfigError("%s: cannot read: %s" % (path, exc), "fix or remove the file") from None
    problem = cache.others_may_change(path)
    if problem:  # its toolkits, search roots and python are run: another user's entries would run as us
        raise ConfigError("%s: not read: %s" % (path, problem), "make it and the dirs above it yours alone to write")
    if len(data) > MAX_BYTES:
        raise ConfigError("%s: larger than %d bytes" % (path, MAX_BYTES), "fix or remove the file")
    try:
        return parse_toml(data)
    except Unreadable as exc:
        raise ConfigError("%s: %s" % (path, exc), "fix or remove the file") from None


def load(paths: "Paths") -> "dict[str, Any]":
    """The config as a dict with defaults filled in; ConfigError names file and key when bad."""
    return {**DEFAULTS, **_checked(paths)}


def switch_settings(paths: "Paths") -> "dict[str, Any]":
    """{"verdict", "loader_path"} from the parsed copy of the file; a value that cannot be read is its
    default: `list` and `verify` report the error, and a switch must still work."""
    try:
        data = _read(paths)
    except ConfigError:
        data = {}
    return {key: default if CHECKS[key](key, data.get(key, default)) else data.get(key, default)
            for key, default in settings.SWITCH_DEFAULTS.items()}


def unknown_keys(data: "dict[str, Any]") -> "list[str]":
    return [key for key in data if key not in CHECKS]


def unknown_key_note(key: str) -> str:
    """The known key a typo most likely meant (`loader-path` -> loader_path), if any."""
    import difflib

    close = difflib.get_close_matches(key.replace("-", "_").lower(), list(CHECKS), n=1, cutoff=0.6)
    return "did you mean %s?" % close[0] if close else "no setting has a name like it"


def _checked(paths: "Paths") -> "dict[str, Any]":
    """The file's own keys, each known one checked (ConfigError names the file and the key), each unknown
    one warned about once per run: the hook reads this file at a prompt, which must work."""
    from cudaswitch import render

    path, data = paths.config_file, _read(paths)
    _validate(path, data)
    for key in unknown_keys(data):
        if (path, key) not in _warned:
            _warned.add((path, key))
            render.message("cudaswitch: warning: %s: unknown key %s is ignored (%s)"
                           % (path, ascii(key[:64]), unknown_key_note(key)))
    return data


def effective(paths: "Paths") -> "list[tuple[str, Any, str]]":
    """[(key, value or None, "config.toml" | "default")] of every setting, then the file's unknown keys."""
    own = _checked(paths)
    rows = [(key, own.get(key, default), "config.toml" if key in own else "default")
            for key, default in EFFECTIVE_DEFAULTS.items()]
    return rows + [(key, own[key], "config.toml") for key in unknown_keys(own)]


def _validate(path: str, data: "dict[str, Any]") -> None:
    for key, value in data.items():
        check = CHECKS.get(key)
        if check is None:
            continue  # unknown keys are kept (a newer cudaswitch may know them); _checked() names them
        problem = check(key, value)
        if problem:
            raise ConfigError("%s: %s %s" % (path, key, problem), "fix or remove the key")


def update(paths: "Paths", **changes: object) -> "dict[str, Any]":
    """Set (or, with value None, remove) keys and write the file atomically (through a symlink). A change
    that changes nothing writes nothing: the file's mtime keys the registry cache."""
    path, before = paths.config_file, _read(paths)
    data = {key: value for key, value in {**before, **changes}.items() if value is not None}
    _validate(path, data)
    if data == before and os.path.lexists(path):
        return data
    import tomli_w

    try:  # a config.toml that links into a dotfiles repository stays that link
        cache.make_dir(os.path.dirname(os.path.abspath(path)))  # 0700 whatever the umask, as _parse wants it
        replace_regular(path, tomli_w.dumps(data).encode("utf-8"), through_links=True, mode=0o600)
    except OSError as exc:  # a read-only or full filesystem, a FIFO there: the old file is left as it was
        raise ConfigError("cannot write %s: %s" % (path, exc.strerror or exc)) from None
    return data


# How `config set KEY VALUE` reads VALUE, by the key's check: a list is comma-separated, a number is
# seconds, a flag true/false; anything else is the text itself (`default 12.4` stays "12.4", not 12.4).
_LISTS, _NUMBERS, _FLAGS = (_strings, _sources), (_timeout,), (_flag,)


def _known(key: str) -> None:
    if key not in CHECKS:
        raise UsageError("unknown setting %s (%s)" % (ascii(key[:64]), unknown_key_note(key)),
                         "`cudaswitch config show` lists them")


def typed_value(key: str, text: str) -> "Any":
    """VALUE as config.toml stores it for KEY; a UsageError (one line, exit 2) when KEY is unknown
    or VALUE breaks config.toml's own check for it."""
    _known(key)
    check = CHECKS[key]
    value: "Any" = text
    if check in _LISTS:
        value = [item.strip() for item in text.split(",") if item.strip()]
    elif check in _NUMBERS:
        try:
            value = float(text)
        except ValueError:
            pass  # the check names what it must be
    elif check in _FLAGS:
        value = {"true": True, "false": False}.get(text.strip().lower(), text)
    problem = check(key, value)
    if problem:
        raise UsageError("%s %s: %s" % (key, problem, ascii(text[:64])))
    return value


def get(paths: "Paths", key: str) -> "tuple[Any, str]":
    """(value in effect or None, where it comes from: "config.toml" or "default")."""
    _known(key)
    return next(((value, origin) for name, value, origin in effective(paths) if name == key), (None, "default"))


def unset(paths: "Paths", key: str) -> bool:
    """Remove KEY from config.toml; False when the file did not set it (nothing is written)."""
    _known(key)
    if key not in _read(paths):
        return False
    update(paths, **{key: None})
    return True
