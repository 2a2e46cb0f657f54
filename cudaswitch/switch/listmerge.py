"""Merging a user's edits to a path list with what a switch did to it, for `off`: the user's
entries stay where they put them, the switch's go, the entries it removed come back."""

import os

MAX_ALIGN = 1 << 20  # cells of the edit-script table: a hostile state's list cannot stall `off`


def split(value):
    return [] if not value else value.split(os.pathsep)


def merged(before, mine, now, ours, name="PATH"):
    """`before` with the user's edits to `mine` (which began with `ours` cudaswitch entries) kept.

    The entries cudaswitch removed return in the gap they came from; the user's new entries stay in
    the gap they were put in, ahead of returning ones except at the end (so `export X=new:$X` and
    `X=$X:new` come out as they would have without cudaswitch)."""
    old, set_, cur = split(before), split(mine), split(now)
    added, kept = set_[:ours], set_[ours:]
    removed = [[] for _ in range(len(kept) + 1)]
    k = 0
    for entry in old:
        if k < len(kept) and entry == kept[k]:
            k += 1
        else:
            removed[k].append(entry)
    out, pending = [], []
    for op, m, c in _align(set_, cur):
        if op == "ins":
            pending.append(cur[c])
            continue
        out += pending
        pending = []
        if m < len(added):
            continue  # cudaswitch's own entry: it goes
        out += removed[m - len(added)]
        if op == "keep":
            out.append(cur[c])
    out += removed[len(kept)] + pending
    if out or name == "PATH":
        return os.pathsep.join(out)
    return "" if before == "" else None  # never "" where it was unset: an empty CPATH entry is "."


def _align(a, b):
    """An edit script turning list a into list b: ("keep", i, j), ("del", i, None), ("ins", None, j),
    in order, from a longest common subsequence (common prefix and suffix taken first: user edits
    are mostly prepends and appends, so the quadratic part stays tiny)."""
    start = 0
    while start < len(a) and start < len(b) and a[start] == b[start]:
        start += 1
    end_a, end_b = len(a), len(b)
    while end_a > start and end_b > start and a[end_a - 1] == b[end_b - 1]:
        end_a, end_b = end_a - 1, end_b - 1
    mid_a, mid_b = a[start:end_a], b[start:end_b]
    rows, cols = len(mid_a), len(mid_b)
    if rows * cols > MAX_ALIGN:  # a state's list or an edit that big: the middle is replaced whole
        return ([("keep", i, i) for i in range(start)] + [("del", start + i, None) for i in range(rows)]
                + [("ins", None, start + j) for j in range(cols)]
                + [("keep", end_a + n, end_b + n) for n in range(len(a) - end_a)])
    lcs = [[0] * (cols + 1) for _ in range(rows + 1)]
    for i in range(rows - 1, -1, -1):
        for j in range(cols - 1, -1, -1):
            lcs[i][j] = lcs[i + 1][j + 1] + 1 if mid_a[i] == mid_b[j] else max(lcs[i + 1][j], lcs[i][j + 1])
    ops = [("keep", i, i) for i in range(start)]
    i = j = 0
    while i < rows or j < cols:
        if i < rows and j < cols and mid_a[i] == mid_b[j]:
            ops.append(("keep", start + i, start + j))
            i, j = i + 1, j + 1
        elif j < cols and (i == rows or lcs[i][j + 1] >= lcs[i + 1][j]):
            ops.append(("ins", None, start + j))
            j += 1
        else:
            ops.append(("del", start + i, None))
            i += 1
    ops += [("keep", end_a + n, end_b + n) for n in range(len(a) - end_a)]
    return ops
