"""dotenv: NAME=value lines, the value unquoted. `docker run --env-file` takes everything after the
first `=` as the value, quotes included, while python-dotenv (and compose) strip quotes, decode
escapes and expand ${...}: only an unquoted value is read back the same by both, byte for byte.
A value that one of them would read otherwise is refused with one line instead of written wrong:
a newline or CR (ends the line), leading or trailing white space (python-dotenv strips it), a
leading quote (python-dotenv unquotes), a `#` after white space (a comment to python-dotenv),
`${` (python-dotenv expands it; it has no escape for it), text that is not UTF-8 (docker refuses
the file). `$`, backslashes and quotes elsewhere are plain characters to both.
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
