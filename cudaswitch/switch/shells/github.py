"""GitHub Actions: lines to append to $GITHUB_ENV (`cudaswitch use 13 --shell github >> "$GITHUB_ENV"`).
Multi-line values use the heredoc form, with a delimiter that cannot occur in the value.
$GITHUB_ENV cannot unset, so unset names become empty values."""


def _delimiter(value):
    tag = "CUDASWITCH_EOF"
    while tag in value:
        tag += "_"
    return tag


def render(diff):
    lines = []
    for name, value in diff["set"].items():
        if "\n" in value:
            tag = _delimiter(value)
            lines += ["%s<<%s" % (name, tag), value, tag]
        else:
            lines.append("%s=%s" % (name, value))
    lines += ["%s=" % name for name in diff["unset"]]
    return "\n".join(lines) + ("\n" if lines else "")
