"""dotenv (docker --env-file, systemd EnvironmentFile, python-dotenv): NAME="value" with \\, ",
$ and newlines escaped. dotenv cannot express "unset", so unset names become empty values."""


def quote(value):
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$").replace("\n", "\\n")
    return '"' + escaped + '"'


def render(diff):
    lines = ["%s=%s" % (name, quote(value)) for name, value in diff["set"].items()]
    lines += ["%s=" % name for name in diff["unset"]]
    return "\n".join(lines) + ("\n" if lines else "")
