"""`--shell json`: {"set": {...}, "unset": [...]} for tools that are not shells. JSON quotes any
value; names are still checked (bash.name), since the reader may well turn them into shell code."""

import json

from cudaswitch.render import escape_surrogates
from cudaswitch.switch.shells.bash import name


def render(diff: dict) -> str:
    checked = {"set": {name(var): value for var, value in diff["set"].items()},
               "unset": [name(var) for var in diff["unset"]]}
    return escape_surrogates(json.dumps(checked, ensure_ascii=False)) + "\n"
