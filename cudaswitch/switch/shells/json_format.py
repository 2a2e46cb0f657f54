"""`--shell json`: {"set": {...}, "unset": [...]} for tools that are not shells."""

import json

from cudaswitch.render import escape_surrogates


def render(diff):
    return escape_surrogates(json.dumps({"set": diff["set"], "unset": diff["unset"]}, ensure_ascii=False)) + "\n"
