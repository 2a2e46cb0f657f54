"""bash (and POSIX sh): single quotes keep every byte literal; a ' is written as '\\''.
Newlines, $, backticks, double quotes and non-ASCII need nothing else inside single quotes."""


def quote(value):
    return "'" + value.replace("'", "'\\''") + "'"


def render(diff):
    lines = ["export %s=%s" % (name, quote(value)) for name, value in diff["set"].items()]
    lines += ["unset %s" % name for name in diff["unset"]]
    return "\n".join(lines) + ("\n" if lines else "")
