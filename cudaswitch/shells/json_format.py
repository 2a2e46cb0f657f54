"""`--shell json`: {"set": {...}, "unset": [...]} for tools that are not shells."""

import json


def render(diff):
    return json.dumps({"set": diff["set"], "unset": diff["unset"]}, ensure_ascii=False) + "\n"
