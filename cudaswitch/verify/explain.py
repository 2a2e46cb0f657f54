"""`explain "TEXT"`: match an error message against compat.toml's rules (whitespace folded, case
ignored, several wordings per rule: torch rewords and wraps messages), then run the registry checks
each rule names. Each distinct cause is reported once, the one whose message comes LAST first: a
traceback's final exception is usually the real one. CUDA's integer versions (12080 is 12.8) are
decoded where a word next to them makes them versions."""

import re

from cudaswitch.errors import UsageError
from cudaswitch.render import counted
from cudaswitch.verify import checkset, facttables, checkregistry
from cudaswitch.verify.host import Host

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from typing import BinaryIO, Callable, TextIO

    from cudaswitch.paths import Paths

UNKNOWN = ("cudaswitch does not know this message: no rule in its compat.toml matches it "
           "(`cudaswitch doctor` checks this host in general)")


KEEP_BYTES = 1 << 20  # the tail of a piped log explain reads: a traceback's end is what matters
READ_BYTES = 64 << 20  # and never more than this from a pipe that does not end (`yes | ...`)


def read_tail(stream: "BinaryIO", keep: int = KEEP_BYTES, limit: int = READ_BYTES) -> "tuple[str, bool]":
    """(the last `keep` bytes of `stream` as text, whether anything was left out), reading at most
    `limit` bytes; memory stays within about two `keep`s whatever the writer sends."""
    tail, total, cut = b"", 0, False
    while total < limit:
        chunk = stream.read(min(keep, limit - total))
        if not chunk:
            break
        total += len(chunk)
        tail = tail + chunk
        if len(tail) > keep:
            tail, cut = tail[-keep:], True
    cut = cut or (total >= limit and bool(stream.read(1)))
    return tail.decode("utf-8", "replace"), cut


def text_to_explain(text: "str | None", stdin: "TextIO | None", note: "Callable[[str], None]") -> str:
    """The message: `text`, else (None or '-') what is piped to stdin. A terminal on stdin is a
    usage error: reading it would wait for input the user does not know is wanted."""
    usage = ("give the error message in quotes, or pipe it in: `python train.py 2>&1 | cudaswitch explain`",
             "see `cudaswitch explain --help`")
    if text is None or text == "-":
        if stdin is None or stdin.isatty():
            raise UsageError(*usage)
        text, cut = read_tail(stdin.buffer)
        if cut:
            note("cudaswitch: explaining the last %d KiB of the input" % (KEEP_BYTES // 1024))
    if not text.strip():
        raise UsageError(*usage)
    return text


def match_rules(text: str) -> list:
    """[(rule, matched text)], the rule whose last match ends latest in `text` first."""
    folded = " ".join(text.split())
    hits = []
    for rule in facttables.error_rules(checkregistry.ids_for("explain")):
        found = [m for p in rule["patterns"] for m in re.finditer(p, folded, re.IGNORECASE)]
        if found:
            last = max(found, key=lambda m: (m.end(), -m.start()))
            hits.append((last.end(), rule, _closed(last.group(0), folded[last.end():last.end() + 1])))
    return [(rule, matched) for _, rule, matched in sorted(hits, key=lambda h: -h[0])]


def _closed(matched: str, after: str) -> str:
    """The match with the quote it opened ('compute_30 -> 'compute_30'): an open quote reads as a cut message."""
    return matched + after if after in ("'", '"') and matched.count(after) % 2 else matched


# An integer is read as a CUDA version only near a word that says it is one, and only where it
# decodes to a real release (major 9-19, minor 0-9): cuDNN's 8907 or 90100 and NCCL's 21701 do not.
VERSION_INT = re.compile(r"(?:version|cuda|driver)[^0-9\n]{0,30}?\b(\d{4,5})\b", re.IGNORECASE)


def cuda_versions(text: str) -> list:
    """[{"value": "11040", "cuda": "11.4"}] for each distinct CUDA integer version in `text`."""
    out: list = []
    for match in VERSION_INT.finditer(text):
        value = int(match.group(1))
        major, rest = divmod(value, 1000)
        if 9 <= major <= 19 and rest % 10 == 0 and rest // 10 <= 9:
            item = {"value": match.group(1), "cuda": "%d.%d" % (major, rest // 10)}
            if item not in out:
                out.append(item)
    return out


def version_notes(result: dict) -> list:
    """Prose lines decoding the message's CUDA integer versions (JSON carries `versions`)."""
    return ["note: %s is CUDA %s (CUDA writes 1000 * major + 10 * minor)" % (v["value"], v["cuda"])
            for v in result.get("versions") or []]


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
    if len(matches) > 1:
        message += " (the first is the last error in the text: usually the real one)"
    return {"known": bool(matches), "matches": matches, "message": message, "versions": cuda_versions(text)}
