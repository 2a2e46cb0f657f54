"""A seeded generator of hostile redist manifests: what a compromised or malicious site mirror can
serve as `redistrib_77.1.0.json`. Each case starts from a well-formed manifest in NVIDIA's scheme
(cuda_nvcc and cuda_cudart for linux-x86_64) and breaks it one or more ways: a release label that
is a path (absolute, `../` up to $HOME, into the canary dir), a version that is Lua, Tcl or shell
code, a relative_path leaving the mirror, wrong JSON types everywhere, terminal escapes, and
documents that are huge, deep or not JSON at all. The archives a case names do not exist, so a
case the checks let through stops at the download: nothing here can install."""

import json
import random

RELEASE = "77.1.0"
PLATFORM = "linux-x86_64"
ESC = "\x1b]0;pwned\x07\x1b[2J"


def base_manifest(release=RELEASE, nvcc_version="77.1.1"):
    """A manifest in NVIDIA's exact scheme whose archives are not on the mirror."""
    def component(key, name, version):
        rel = "%s/%s/%s-%s-%s-archive.tar.xz" % (key, PLATFORM, key, PLATFORM, version)
        return {"name": name, "license": "CUDA Toolkit", "version": version,
                PLATFORM: {"relative_path": rel, "sha256": "ab" * 32, "md5": "cd" * 16, "size": "1024"}}

    return {"release_date": "2030-01-01", "release_label": release, "release_product": "cuda",
            "cuda_nvcc": component("cuda_nvcc", "CUDA NVCC", nvcc_version),
            "cuda_cudart": component("cuda_cudart", "CUDA Runtime (cudart)", "77.1.2")}


def labels(canary, home_depth):
    """Release labels that are paths or not versions; `home_depth` `..`s climb from the managed
    dir to $HOME, and the canary dir is named absolutely and relatively."""
    up = "../" * home_depth
    return [str(canary / "abs"), up + "x", up + "canary-x", "/tmp/" + canary.name + "-abs", ".", "", "abc",
            "..", "77.1.0/../../../x", "77.1/x", "77.1.0\n", " 77.1.0", "77.1.0 ", "77", "٧٧.١.٠", "77.1.0.0.0",
            "1" * 5000, "77." + "9" * 400, "~/x", "$(touch %s/label)" % canary, "`touch %s/label`" % canary,
            "77.1.0;touch %s/label" % canary, "77.1.0" + ESC, "77.1.0\x00", "-77.1.0", "+77.1", "77.1.0\\",
            "13.1.2", "77.1.1", "77.1.0\u202e"]


def versions(canary):
    """Component versions that are code in a Lua or Tcl modulefile, or in a shell."""
    touch = "touch %s/version" % canary
    return ['77.1.0]]) os.execute("%s") --' % touch, '77.1.0"); os.execute("%s") --' % touch,
            "77.1.0]==]) os.execute('%s') --[==[" % touch, "77.1.0\nos.execute('%s')" % touch,
            "77.1.0 [exec %s]" % touch, "77.1.0} ; exec %s ; {" % touch, '77.1.0" ; exec %s ; "' % touch,
            "77.1.0 $(%s)" % touch, "77.1.0 `%s`" % touch, "77.1.0\\", "77.1.0\\\nexec " + touch,
            "77.1.0" + ESC, "77.1.0\r\nexec " + touch, "", "x", "77.1.0-rc1", "77.1.0\x00", "1" * 5000]


def paths(canary):
    """relative_path values that leave the mirror, hide a query or a host, or are not text."""
    return ["/etc/passwd", "../../../../etc/passwd", "cuda_nvcc/../../x.tar.xz", "//evil.example/x.tar.xz",
            "http://evil.example/x.tar.xz", "file:///etc/passwd", "a/b.tar.xz?x=1", "a/b.tar.xz#f", "a\nb.tar.xz",
            "a\x00b.tar.xz", "a/./b.tar.xz", "a//b.tar.xz", "./a.tar.xz", "~/a.tar.xz", str(canary / "p.tar.xz"),
            "a" * 5000 + ".tar.xz", "a\\..\\b.tar.xz", "%2e%2e/%2e%2e/x.tar.xz", "a/b" + ESC + ".tar.xz", "",
            "-rf.tar.xz", "a/b c.tar.xz"]


WRONG_TYPES = (None, True, False, 0, -1, 1.5, 1e308, [], ["77.1.0"], {}, {"a": 1}, "", 10 ** 30)
SHAS = ("", "0" * 63, "0" * 65, "g" * 64, "ab" * 32 + "\n", " " + "ab" * 31 + " ", "AB" * 32 + ESC)
SIZES = ("-1", "0", "1e9", "0x10", " 1024", "1024 ", "1_024", "1" * 5000, "1" * 16, "١٠٢٤", -5, 0, 1.5, True, 2 ** 60)
TEXTS = (ESC, "a\nb", "x" * 10000, "\ud800", "\u202e", "\x00")
KEYS = ("../x", "cuda_nvcc\n", "]]) os.execute('x') --", "$(x)", "", ".", ESC, "a" * 300, "cuda nvcc", "\x00")


def _mutate(document, rng, canary, home_depth):
    """Break `document` one way (a field replaced, a component added); returns what was done."""
    nvcc = document["cuda_nvcc"] if isinstance(document.get("cuda_nvcc"), dict) else {}
    plat = nvcc[PLATFORM] if isinstance(nvcc.get(PLATFORM), dict) else {}  # an earlier break may have gone
    choice = rng.randrange(11)
    if choice == 0:
        document["release_label"] = rng.choice(labels(canary, home_depth))
    elif choice == 1:
        document["release_label"] = rng.choice(WRONG_TYPES)
    elif choice == 2:
        nvcc["version"] = rng.choice(versions(canary) + list(WRONG_TYPES))
    elif choice == 3:
        plat["relative_path"] = rng.choice(paths(canary) + list(WRONG_TYPES))
    elif choice == 4:
        plat["sha256"] = rng.choice(SHAS + WRONG_TYPES)
    elif choice == 5:
        plat["size"] = rng.choice(SIZES + WRONG_TYPES)
    elif choice == 6:
        field = rng.choice(("release_date", "release_product"))
        document[field] = rng.choice(TEXTS + WRONG_TYPES)
    elif choice == 7:
        nvcc["name"] = rng.choice(TEXTS + WRONG_TYPES)
    elif choice == 8:
        document[rng.choice(KEYS)] = dict(nvcc)
    elif choice == 9:
        nvcc[PLATFORM] = rng.choice(WRONG_TYPES)
    else:
        document[rng.choice(("cuda_nvcc", "cuda_cudart"))] = rng.choice(WRONG_TYPES)
    return "field %d" % choice


def _document_bytes(rng):
    """Whole documents that are not a manifest: deep, huge, not JSON, not UTF-8, not an object."""
    choice = rng.randrange(9)
    if choice == 0:
        depth = rng.choice((17, 1000, 200000))
        return b"[" * depth + b"]" * depth, "deep array %d" % depth
    if choice == 1:
        depth = rng.choice((20, 5000, 200000))
        return b'{"release_label": "77.1.0", "x": ' + b'{"a": ' * depth + b"1" + b"}" * depth + b"}", "deep object"
    if choice == 2:
        body = json.dumps(base_manifest()).encode()
        return body[:-1] + b', "pad": "' + b" " * rng.choice((5 << 20, 9 << 20)) + b'"}', "huge"
    if choice == 3:
        return b"[" * rng.choice((10, 200000)), "unterminated"
    if choice == 4:
        return rng.choice((b"\xff\xfe\x00\x01", b"\xc3\x28", bytes(range(256)))), "not UTF-8"
    if choice == 5:
        return rng.choice((b"[]", b"null", b"77.1", b'"77.1.0"', b"NaN", b"{}", b"")), "not an object"
    if choice == 6:
        return b'{"release_label": "77.1.0", "n": ' + b"1" * 5000 + b"}", "huge number"
    if choice == 7:
        return b'{"release_label": "77.1.0", "release_label": "/tmp/x"}', "duplicate key"
    return b'{"release_label": "' + b"\\" * rng.choice((1, 3, 4999)) + b'"}', "backslashes"


def generate(count, seed, canary, home_depth):
    """[(bytes of redistrib_77.1.0.json, what it tries)] for `count` cases."""
    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        if rng.random() < 0.2:
            cases.append(_document_bytes(rng))
            continue
        document = base_manifest()
        tried = [_mutate(document, rng, canary, home_depth) for _ in range(rng.choice((1, 1, 1, 2, 3)))]
        cases.append((json.dumps(document).encode("utf-8", "surrogatepass"), ", ".join(tried)))
    return cases
