"""The text `cudaswitch init SHELL` prints: the hook file beside this module, with the project-file
names and rules filled in from projectfile's data and the variables a switch touches from envdiff's,
so the shell's "did anything change" test can never disagree with what hook-env reads."""

import os

from cudaswitch.switch import envdiff
from cudaswitch.switch import projectfile

SHELLS = ("bash", "zsh", "fish")


def hook_text(shell: str, program: str = None) -> str:
    """The hook for `shell`, naming `program` (an absolute path) as the cudaswitch to run if given."""
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "cudaswitch." + shell),
              encoding="utf-8") as handle:
        text = handle.read()
    for name, value in _fills(shell).items():
        text = text.replace("@%s@" % name, value)
    if program:
        from cudaswitch.switch.shells import bash, fish, zsh

        quote = {"bash": bash.quote, "zsh": zsh.quote, "fish": fish.quote}[shell]
        assign = "set -g __cudaswitch_bin %s\n" if shell == "fish" else "__cudaswitch_bin=%s\n"
        text = assign % quote(program) + text
    return text


def _fills(shell):
    names = [rule[0] for rule in projectfile.HOOK_RULES]
    variables = sorted(set(envdiff.SCALARS) | set(envdiff.LISTS) | {envdiff.STATE_VAR})
    if shell == "fish":
        files = " ".join("$dir/%s" % name for name in names)
    else:
        files = " ".join('"$dir/%s"' % name for name in names)
    functions, end = _shared(shell)
    return {"WRAPPER": functions, "FINGERPRINT_END": end, "FILES": files, "RULES": _rules(shell),
            "READ_BYTES": str(projectfile.MAX_BYTES + 1), "VARIABLES": " ".join(variables)}


END_MARK = "# @FINGERPRINT_END@"


def _shared(shell):
    """(the functions bash and zsh share, how their fingerprint function ends), from one text
    (fish has its own syntax, in its hook)."""
    if shell == "fish":
        return "", ""
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "cudaswitch.wrapper.sh"),
              encoding="utf-8") as handle:
        text = handle.read().replace("@SHELL@", shell)
    functions, _, end = text.split("\n", 1)[1].partition(END_MARK)
    return functions.rstrip("\n"), end.split("\n", 1)[1].rstrip("\n")


def _rules(shell):
    """One case arm per project file: which word makes it count, and whether it ends the walk.
    A file that fills the whole read (too long to judge from its start) counts: hook-env decides."""
    arms = []
    full = str(projectfile.MAX_BYTES + 1)
    for name, word, final in projectfile.HOOK_RULES:
        if shell == "fish":
            body = ("set -g __cudaswitch_fp_now \"$fp$f\"\\x1f\"$meta$content\"; return 0" if final else
                    "string match -q '*%s*' -- $content; or test (string length -- \"$content\") -ge %s; or continue"
                    % (word, full))
            arms.append("case '*/%s'\n                    %s" % (name, body))
        else:
            body = ('__cudaswitch_fp_now="$fp$f"$\'\\x1f\'"$meta$content"; return 0' if final else
                    '[[ $content == *%s* || ${#content} -ge %s ]] || continue' % (word, full))
            arms.append("*/%s) %s ;;" % (name, body))
    indent = "\n                " if shell == "fish" else "\n                "
    return indent.join(arms)
