"""`explain "TEXT"`: match an error message against the error rules of compat.toml, then run the
checks that confirm or rule out each cause on this host: a rule names registry ids
(verify/registry.py), and explain shows exactly those checks, made by the functions that make them
for every other command.

Messages are matched with whitespace folded and case ignored, against several wordings per rule
(torch rewords messages between releases and wraps them in tracebacks)."""

import re

from cudaswitch.render import counted
from cudaswitch.verify import checkset, facts as table, registry as checks_registry
from cudaswitch.verify.host import Host

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from cudaswitch.paths import Paths

UNKNOWN = ("cudaswitch does not know this message: no rule in its compat.toml matches it "
           "(`cudaswitch doctor` checks this host in general)")


def match_rules(text: str) -> list:
    """[(rule, matched text)] in the order the messages appear in `text`."""
    folded = " ".join(text.split())
    hits = []
    for rule in table.error_rules(checks_registry.ids_for("explain")):
        found = [m for m in (re.search(p, folded, re.IGNORECASE) for p in rule["patterns"]) if m]
        if found:
            first = min(found, key=lambda m: m.start())
            hits.append((first.start(), rule, first.group(0)))
    return [(rule, matched) for _, rule, matched in sorted(hits, key=lambda h: h[0])]


def explain(text: str, paths: "Paths", registry: dict, env: dict, python: "str | None" = None,
            timeout: "float | None" = None) -> dict:
    """{"known": bool, "matches": [{"id", "cause", "todo", "matched", "source", "checks"}], "message"}."""
    host = Host(paths, registry, env, python=python, timeout=timeout)
    matches = []
    for rule, matched in match_rules(text):
        checks = checkset.run_ids(host, rule["checks"], text)
        matches.append({"id": rule["id"], "cause": rule["cause"], "todo": rule["todo"], "matched": matched,
                        "source": rule["source"], "verified": rule.get("verified", True), "checks": checks})
    message = UNKNOWN if not matches else counted(len(matches), "known cause")
    return {"known": bool(matches), "matches": matches, "message": message}
