"""Host lists as pdsh, clush and Slurm write them: `node[01-64,70],gpu1` <-> a list of names."""

import itertools
import re
from typing import Iterable, Iterator, List

from cudaswitch.errors import UsageError

MAX_NODES = 1_000_000
MAX_BRACKETS = 1000  # each [range] in one name is one level of recursion
BRACKET = re.compile(r"\[([^\[\]]*)\]")
NUMBERED = re.compile(r"^(.*?)(\d+)$")
RANGE = re.compile(r"^(\d{1,9})(?:-(\d{1,9}))?$")


def expand(hostlist: str) -> List[str]:
    """`node[01-03],gpu1` -> ['node01', 'node02', 'node03', 'gpu1'] (zero padding kept)."""
    names: List[str] = []
    if hostlist.count("[") > MAX_BRACKETS:
        raise UsageError("host list %s has more than %d [ranges]" % (_short(hostlist), MAX_BRACKETS))
    for item in _split_top(hostlist):
        names.extend(_expand_item(item, hostlist))
        if len(names) > MAX_NODES:
            raise UsageError("host list %s names more than %d nodes" % (_short(hostlist), MAX_NODES))
    return list(dict.fromkeys(names))


def _split_top(hostlist: str) -> List[str]:
    """Split on commas outside brackets."""
    items: List[str] = []
    depth, start = 0, 0
    for index, char in enumerate(hostlist):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            items.append(hostlist[start:index])
            start = index + 1
    items.append(hostlist[start:])
    return [item.strip() for item in items if item.strip()]


def _expand_item(item: str, whole: str) -> List[str]:
    match = BRACKET.search(item)
    if match is None:
        if "[" in item or "]" in item or not item.isprintable():
            raise UsageError("host list %s is not one pdsh would read" % _short(whole))
        return [item]
    head, tail = item[:match.start()], item[match.end():]
    out: List[str] = []
    for number in _numbers(match.group(1), whole):
        out.extend(_expand_item(head + number + tail, whole))
        if len(out) > MAX_NODES:
            raise UsageError("host list %s names more than %d nodes" % (_short(whole), MAX_NODES))
    return out


def _numbers(ranges: str, whole: str) -> Iterator[str]:
    for part in ranges.split(","):
        match = RANGE.match(part.strip())
        if not match:
            raise UsageError("host list %s has a range that is not N or N-M: %s" % (_short(whole), _short(part)))
        low, high = match.group(1), match.group(2) or match.group(1)
        if int(high) - int(low) > MAX_NODES or int(high) < int(low):
            raise UsageError("host list %s has a range that is empty or too large: %s" % (_short(whole), part))
        width = len(low) if low.startswith("0") else 1
        for value in range(int(low), int(high) + 1):
            yield str(value).zfill(width)


def fold(names: Iterable[str]) -> str:
    """['node01', 'node02', 'node03', 'gpu1'] -> 'gpu1,node[01-03]', by prefix and digit count."""
    families: dict[tuple[str, int], list] = {}
    for name in dict.fromkeys(names):
        match = NUMBERED.match(name)
        key = (match.group(1), len(match.group(2))) if match and "[" not in name else (name, 0)
        families.setdefault(key, []).append(int(match.group(2)) if match and key[1] else None)
    parts = []
    for (prefix, width), values in sorted(families.items()):
        if not width:
            parts.append(prefix)
            continue
        spans = _spans(sorted(set(values)), width)
        parts.append(prefix + spans[0] if len(values) == 1 else "%s[%s]" % (prefix, ",".join(spans)))
    return ",".join(parts)


def fold_short(names: Iterable[str], limit: int = 80) -> str:
    """fold(), cut at `limit` characters for a summary line (the full list is elsewhere)."""
    text = fold(names)
    return text if len(text) <= limit else text[:limit].rsplit(",", 1)[0] + ",..."


def _spans(values: List[int], width: int) -> List[str]:
    """[1, 2, 3, 7] -> ['01-03', '07'] for width 2: a run of consecutive values has one value - index."""
    spans = []
    for _, group in itertools.groupby(enumerate(values), lambda pair: pair[1] - pair[0]):
        run = [value for _, value in group]
        low, high = str(run[0]).zfill(width), str(run[-1]).zfill(width)
        spans.append(low if len(run) == 1 else "%s-%s" % (low, high))
    return spans


def _short(text: str, limit: int = 60) -> str:
    text = repr(text)
    return text if len(text) <= limit else text[:limit] + "..."
