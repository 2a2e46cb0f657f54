"""fish: inside single quotes only \\ and ' are special. Variables named *PATH are lists in fish,
so PATH-like values are split on ':' into one quoted element each (fish joins them on export)."""


def quote(value):
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def render(diff):
    lines = []
    for name, value in diff["set"].items():
        if name.endswith("PATH") and value:
            elements = " ".join(quote(v) for v in value.split(":"))
        else:
            elements = quote(value)
        lines.append("set -gx %s %s" % (name, elements))
    lines += ["set -e %s" % name for name in diff["unset"]]
    return "\n".join(lines) + ("\n" if lines else "")
