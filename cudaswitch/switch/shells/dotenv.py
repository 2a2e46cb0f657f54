"""dotenv: NAME=value lines, the value unquoted: `docker run --env-file` takes quotes literally while
python-dotenv strips them, decodes escapes and expands ${...}, so only an unquoted value reads back
the same in both. What either would read otherwise is refused in one line: a newline or CR, white
space at either end, a leading quote, a `#` after white space, `${`, text that is not UTF-8.
dotenv cannot express "unset", so unset names become empty values."""

from cudaswitch.switch.shells.bash import code


def problem(value: str) -> str | None:
    """Why `value` cannot be written so that every dotenv reader reads it back, or None."""
    if "\n" in value or "\r" in value or "\0" in value:
        return "it spans lines"
    if value[:1].isspace() or value[-1:].isspace():
        return "it starts or ends with white space"
    if value[:1] in ("'", '"'):
        return "it starts with a quote"
    if "${" in value:
        return "it holds ${"
    if any(c == "#" and value[i - 1].isspace() for i, c in enumerate(value) if i):
        return "it holds a # after white space"
    try:
        value.encode("utf-8")
    except UnicodeError:
        return "it is not UTF-8 text"
    return None


def quote(var: str, value: str) -> str:
    why = problem(value)
    if why:
        from cudaswitch.errors import CudaSwitchError

        raise CudaSwitchError("cannot write %s as a dotenv line: %s" % (var, why),
                              "use --shell json, which carries any value")
    return value


def render(diff: dict) -> str:
    return code(diff, "%s=%s", "%s=", value=quote)
