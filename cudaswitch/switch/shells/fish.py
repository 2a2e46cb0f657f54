"""fish: inside single quotes only \\ and ' are special. Variables named *PATH are lists in fish,
so PATH-like values are split on ':' into one quoted element each (fish joins them on export).
Names are checked as in bash.name: fish has no quoting for them either."""

from cudaswitch.switch.shells import Shell
from cudaswitch.switch.shells.bash import code, refuse


def quote(value: str) -> str:
    if "\0" in value:
        refuse("a value holds a NUL byte")
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def elements(var: str, value: str) -> str:
    return " ".join(quote(v) for v in value.split(":")) if var.endswith("PATH") and value else quote(value)


def render(diff: dict) -> str:
    return code(diff, "set -gx %s %s", "set -e %s", "set -gu %s", elements)


class Fish(Shell):
    name = "fish"
    project_file = "$dir/%s"  # fish does not split a variable's value: no quotes needed
    rule_arm = "case '*/%s'\n                    %s"
    rule_ends_walk = "set -g __cudaswitch_fp_now \"$fp$f\"\\x1f\"$meta$content\"; return 0"
    rule_needs_word = ("string match -q '*%(word)s*' -- $content; or test (string length -- \"$content\") "
                       "-ge %(full)s; or continue")
    quote = staticmethod(quote)
    render = staticmethod(render)

    def set_global(self, var: str, value: str) -> str:
        return "set -g %s %s\n" % (var, quote(value))

    def eval_hint(self, args: str) -> str:
        return "cudaswitch %s | source" % args  # fish's eval of a command's output


SHELL = Fish()
