"""A seeded generator of hostile project directories: what strangers' repositories can hold where a
project file belongs. Every case is a directory with one `.cudaversion`, `.tool-versions` or
`pyproject.toml`, made from one of the shapes below, often under an odd directory name and beside
files that would run if anything of the repo were executed (json.py, bin/nvcc, ./python3, ...).
Each executable part appends to the canary file, so "nothing ran" is one `exists()`."""

import os
import random

KINDS = (".cudaversion", ".tool-versions", "pyproject.toml")
SECRET = "ghp_SECRETTOKEN0123456789abcdefghijklmnop"  # what a link to ~/.git-credentials would show
ODD_NAMES = ("plain", "with space", "new\nline", "esc\x1b]0;t\x07", "quote'd", 'dq"x', "dollar$(x)", "back`x`",
             "uni-ü-✓", "semi;colon", "-dash", "tab\tx", "star*?[x]", "glob{a,b}", "\\back")
VALID = ("13.0", "13.1", "13", "latest", "system", ">=13.0,<14", "system:13.0", "12.4")
BAD_REQUESTS = (
    "/usr/local/cuda-13.1", "../../../usr/local/cuda-13.1", "~/cuda", "./x", "$(touch {canary})",
    "`touch {canary}`", "13.0; touch {canary}", "13.0 && touch {canary}", "13.0\x1b]0;pwned\x07", "¹³",
    "١٣.٠", "13.0\u200b", "1" * 5000, "13." + "9" * 400, "13.0.0.0.0", "conda:", ":13", "foo:13", ">=", "~=13",
    "latest:13", "\u202e31", "13.0\\", "'13.0'", '"13.0"', "13.0 13.1", "system:/usr", "x" * 300, "NaN", "-13",
    "+13", "0x0d", "1e3", "13,0", "13..0", "⁹", "１３", "13.0\r", "\t13.0",
)


def _toml_value(rng, canary):
    choice = rng.randrange(10)
    if choice == 0:
        return 'tool = "cudaswitch"\n'
    if choice == 1:
        depth = rng.choice((40, 1000, 5000))
        return "[tool.cudaswitch]\ncuda = " + "[" * depth + "]" * depth + "\n"
    if choice == 2:
        return "[tool]\ncudaswitch = 13\n"
    if choice == 3:
        return "[tool.cudaswitch]\ncuda = 13.0\n"
    if choice == 4:
        return "[tool.cudaswitch]\ncuda = %s\n" % rng.choice(("nan", "inf", "1e308", "true", "[1, 2]", "{a = 1}"))
    if choice == 5:
        return "[tool.cudaswitch\ncuda = '13.0'\n"  # not TOML
    if choice == 6:
        return "x = " + "{a = " * 300 + "1" + "}" * 300 + "\n[tool.cudaswitch]\ncuda = '13.0'\n"
    text = rng.choice(VALID + BAD_REQUESTS).format(canary=canary)
    return "[project]\nname = 'x'\n\n[tool.cudaswitch]\ncuda = %s\n" % _toml_string(text)


def _toml_string(text):
    return '"' + "".join(c if c.isprintable() and c not in '"\\' else "\\u%04x" % ord(c) for c in text
                         if ord(c) < 0x10000) + '"'


def _text_content(rng, kind, canary):
    request = rng.choice(VALID + BAD_REQUESTS).format(canary=canary)
    if kind == ".tool-versions":
        return "python 3.11.7\ncuda %s\n" % request if rng.random() < 0.8 else "cuda\n"
    comment = "# pinned\n" if rng.random() < 0.3 else ""
    return comment + request + "\n"


def write_case(base, index, rng, canary, secret_file):
    """Make case `index` under base; returns (project dir, kind, shape)."""
    name = "%04d-%s" % (index, rng.choice(ODD_NAMES))
    project = base / name
    (project / "bin").mkdir(parents=True)
    kind = rng.choice(KINDS)
    path = project / kind
    shape = rng.choices(("text", "bytes", "special", "huge"), weights=(60, 15, 15, 10))[0]
    if shape == "text":
        content = _toml_value(rng, canary) if kind == "pyproject.toml" else _text_content(rng, kind, canary)
        path.write_text(content)
    elif shape == "bytes":
        blob = rng.choice((b"13.0\x00\n", b"\xff\xfe1\x003\x00", bytes(range(256)) * 4, b"\xc3\x28\n",
                           os.urandom(rng.randrange(1, 9000)), b"13.0" + b"\n" * 5000, b"cudaswitch\x00cuda"))
        path.write_bytes(blob)
    elif shape == "special":
        special = rng.choice(("fifo", "dir", "dangling", "/dev/zero", "/dev/urandom", "/dev/null", "/dev/tty",
                              "/proc/kmsg", "/proc/self/environ", "/proc/self/mem", "secret", "loop", "unreadable"))
        if special == "fifo":
            os.mkfifo(path)
        elif special == "dir":
            path.mkdir()
        elif special == "dangling":
            os.symlink(str(project / "nowhere"), path)
        elif special == "secret":
            os.symlink(str(secret_file), path)
        elif special == "loop":
            os.symlink(str(path), path)
        elif special == "unreadable":
            path.write_text("13.0\n")
            path.chmod(0)
        else:
            os.symlink(special, path)
    else:  # huge: sparse, up to 50 MiB, a valid start
        head = {"pyproject.toml": b"[tool.cudaswitch]\ncuda = '13.0'\n"}.get(kind, b"13.0\n")
        with open(path, "wb") as handle:
            handle.write(head + b"#" * rng.randrange(0, 8000))
            handle.truncate(rng.choice((5000, 1 << 20, (1 << 20) + 1, 10 << 20, 50 << 20)))
    if rng.random() < 0.3:  # what a probe in the project dir, or a relative PATH entry, would run
        for module in ("json", "ctypes", "os"):
            (project / (module + ".py")).write_text("open(%r, 'a').write('%s.py\\n')\n" % (str(canary), module))
        for tool in ("bin/nvcc", "nvcc", "nvidia-smi", "gcc", "python3"):
            (project / tool).write_text("#!/bin/sh\necho %s >> '%s'\n" % (tool, canary))
            (project / tool).chmod(0o755)
    return project, kind, shape


def generate(base, count, seed, canary):
    """[(project, kind, shape)] for `count` cases; the secret file lives outside every project."""
    rng = random.Random(seed)
    secret_file = base / "git-credentials"
    secret_file.write_text("https://user:%s@github.com\n" % SECRET)
    corpus_dir = base / "corpus"
    corpus_dir.mkdir()
    return [write_case(corpus_dir, i, rng, canary, secret_file) for i in range(count)]
