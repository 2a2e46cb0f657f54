"""fish: inside single quotes only \\ and ' are special. Variables named *PATH are lists in fish,
so PATH-like values are split on ':' into one quoted element each (fish joins them on export).
Names are checked as in bash.name: fish has no quoting for them either."""

from cudaswitch.switch.shells.bash import name


def quote(value):
    if "\0" in value:
        from cudaswitch.switch.shells.bash import _refuse

        _refuse("a value holds a NUL byte")
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def render(diff):
    lines = []
    for var, value in diff["set"].items():
        if var.endswith("PATH") and value:
            elements = " ".join(quote(v) for v in value.split(":"))
        else:
            elements = quote(value)
        lines.append("set -gx %s %s" % (name(var), elements))
    lines += ["set -e %s" % name(var) for var in diff["unset"]]
    lines += ["set -gu %s" % name(var) for var in diff.get("unexport", ())]
    return "\n".join(lines) + ("\n" if lines else "")
