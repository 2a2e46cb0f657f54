"""A hostile redist mirror: the manifest it serves is data, never a path and never code.

Each test serves a crafted `redistrib_<release>.json` from 127.0.0.1 or file:// and runs the real
`cudaswitch install ... --mirror URL` (with --prefix and --modulefile where a site install is the
target), as an attacker who controls a site mirror, or the network path to it, would. Modulefiles
are read by the real Lmod and the real Environment Modules. The seeded corpus at the end
(tests/hostile_manifests.py; CUDASWITCH_MANIFEST_CORPUS_SIZE / _SEED change it) goes through the
real parsing, planning and install code in-process, and part of it through the command."""

import json
import os
import shutil
import subprocess
import time
import traceback
from pathlib import Path

import pytest

from tests import kits, redist_mirror
from tests.conftest import Host
from tests.hostile_manifests import ESC, RELEASE, base_manifest, generate
from tests.install_support import drop_installed_trees  # noqa: F401 (autouse fixture)

SIZE = int(os.environ.get("CUDASWITCH_MANIFEST_CORPUS_SIZE", "400"))
SEED = int(os.environ.get("CUDASWITCH_MANIFEST_CORPUS_SEED", "22"))
CASE_LIMIT = 5.0
HOME_DEPTH = 4  # HOME/.local/share/cudaswitch/toolkits: four `..` climb back to HOME
RAW_CONTROL = ("\x1b", "\x07", "\x00", "\r")


class Site:
    """A test host with a real-looking HOME (data and cache dirs at their XDG places), a site tree
    for --prefix, a modulefile dir and a canary dir that no case may write into."""

    def __init__(self, base: Path):
        (base / "root").mkdir(parents=True)
        self.host = Host(base / "root", base / "work")
        self.home, self.site, self.modules = base / "home", base / "site", base / "modules"
        self.canary = base / ("csw-canary-%s" % os.urandom(4).hex())
        for path in (self.home, self.site, self.modules, self.canary):
            path.mkdir()
        self.host.env.update(HOME=str(self.home), CUDASWITCH_DATA_DIR=str(self.data_dir),
                             CUDASWITCH_CACHE_DIR=str(self.home / ".cache" / "cudaswitch"))

    @property
    def data_dir(self):
        return self.home / ".local" / "share" / "cudaswitch"

    @property
    def managed(self):
        return self.data_dir / "toolkits"

    def mirror(self, name, manifest, release=RELEASE):
        """A mirror root holding compute/cuda/redist/redistrib_<release>.json (dict or bytes)."""
        base = self.host.work.parent / "mirrors" / name / "compute" / "cuda" / "redist"
        base.mkdir(parents=True)
        data = manifest if isinstance(manifest, bytes) else json.dumps(manifest).encode("utf-8", "surrogatepass")
        (base / ("redistrib_%s.json" % release)).write_bytes(data)
        return base

    def install(self, mirror, *extra, request=RELEASE, timeout=120):
        url = mirror if isinstance(mirror, str) else mirror.as_uri()
        return self.host.run("install", request, "--mirror", url, *extra, timeout=timeout)


@pytest.fixture
def site(tmp_path):
    return Site(tmp_path)


def tree(path: Path):
    """Every path under `path` (links not followed), relative to it."""
    found = set()
    for directory, dirs, files in os.walk(path):
        for name in dirs + files:
            found.add(os.path.relpath(os.path.join(directory, name), path))
    return found


def refused(proc):
    """The one error line a refused install ends with; no traceback, no stdout, no raw escapes."""
    assert proc.returncode not in (0, None) and proc.stdout == "", (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert not any(c in proc.stderr for c in RAW_CONTROL), repr(proc.stderr)
    lines = proc.stderr.splitlines()
    assert lines and lines[-1].startswith("cudaswitch: error: "), proc.stderr
    assert [line for line in lines if line.startswith("cudaswitch: error: ")] == lines[-1:], proc.stderr
    return lines[-1]


def labelled(label):
    document = base_manifest()
    document["release_label"] = label
    return document


# --- the release label chooses no path --------------------------------------------------------------------


def test_absolute_release_label_installs_nowhere(site):
    """An absolute release_label: the old code built and renamed the toolkit tree to that path."""
    victim = site.canary / "abs"
    line = refused(site.install(site.mirror("abs", labelled(str(victim)))))
    assert "release_label" in line and "is not a CUDA release version" in line
    assert tree(site.canary) == set() and not site.managed.exists()


def test_label_climbing_to_home_neither_lands_there_nor_cleans_its_dirs(site):
    """`../../../../x` from the managed dir is $HOME/x; the old stale-build cleanup then ran in $HOME
    and deleted the user's own `.tmp-*` and `.trash-*` dirs there."""
    for name in (".tmp-notes-1", ".trash-old"):
        (site.home / name).mkdir()
        (site.home / name / "keep.txt").write_text("mine\n")
    before = tree(site.home)
    line = refused(site.install(site.mirror("home", labelled("../" * HOME_DEPTH + "x"))))
    assert "'../../../../x' is not a CUDA release version" in line
    assert before <= tree(site.home)  # nothing of the user's removed
    assert all(p == ".cache" or p.startswith(".cache/cudaswitch") for p in tree(site.home) - before)


@pytest.mark.parametrize("label", [".", "", "abc", "77.1/x", "77.1.0\n", "13.1.2"],
                         ids=["dot", "empty", "abc", "slash", "newline", "another-release"])
def test_labels_that_are_not_this_release_are_refused(site, label):
    """`.` installed over the managed dir itself, `""` likewise, `abc` made `use managed:abc`; a label
    naming another release than its file (redistrib_77.1.0.json saying 13.1.2) would replace it."""
    line = refused(site.install(site.mirror("label", labelled(label))))
    assert "release_label" in line or "says it is release" in line
    assert not site.managed.exists() or os.listdir(site.managed) == []


def test_prefix_install_with_a_slash_label_leaves_nothing(site):
    """With --prefix the label named the managed link and the modulefile: a `/` in it left the
    prefix tree and a `.tmp-link-PID` behind. Now nothing is made at all."""
    prefix = site.site / "opt" / "cuda" / "77.1"
    line = refused(site.install(site.mirror("slash", labelled("77.1.0/../../../../x")),
                                "--prefix", str(prefix), "--modulefile", str(site.modules)))
    assert "release_label" in line
    assert tree(site.site) == set() and tree(site.modules) == set()
    assert not site.managed.exists() or not [e for e in os.listdir(site.managed) if e.startswith(".tmp-link")]


def test_cleanup_beside_a_prefix_removes_only_cudaswitch_scratch_dirs(site):
    """A site's /opt/cuda holds other people's `.tmp-*` and `.trash-*` dirs: an install into
    /opt/cuda/77.1 removed them all as stale builds. Only a dir with cudaswitch's marker goes."""
    from cudaswitch.install.steps import make_scratch

    parent = site.site / "opt" / "cuda"
    parent.mkdir(parents=True)
    for name in (".tmp-77.1-1", ".trash-77.1-2", ".tmp-backup-3", ".trash-x"):
        (parent / name).mkdir()
        (parent / name / "data").write_text("someone else's\n")
    (parent / ".tmp-link").symlink_to(site.canary)
    make_scratch(str(parent / ".tmp-77.1-999999"))  # a build of ours whose process died
    make_scratch(str(parent / ".trash-12.4-999999"))
    line = refused(site.install(site.mirror("ok", base_manifest()), "--prefix", str(parent / "77.1")))
    assert "cuda_nvcc-linux-x86_64-77.1.1" in line  # it got as far as the download: the archives are not on the mirror
    assert sorted(os.listdir(parent)) == [".tmp-77.1-1", ".tmp-backup-3", ".tmp-link",
                                          ".trash-77.1-2", ".trash-x"]
    assert all((parent / n / "data").exists() for n in (".tmp-77.1-1", ".trash-77.1-2", ".tmp-backup-3", ".trash-x"))


FIELDS = [
    ("relative_path", "/etc/passwd", "relative_path"), ("relative_path", "a/../../../x.tar.xz", "relative_path"),
    ("relative_path", "a\nb.tar.xz", "relative_path"), ("relative_path", ["a"], "relative_path"),
    ("sha256", 12, "sha256"), ("sha256", "ab" * 31, "sha256"), ("size", "-1", "size"), ("size", 1.5, "size"),
    ("size", True, "size"), ("size", "1" * 5000, "size"),
]


@pytest.mark.parametrize("field, value, named", FIELDS, ids=["%s-%d" % (f[0], i) for i, f in enumerate(FIELDS)])
def test_archive_fields_are_type_checked(site, field, value, named):
    """A relative_path outside the mirror, a sha256 that is no digest, a size that int() bent into
    shape (True -> 1, 1.5 -> 1, 5,000 digits -> ValueError): one line naming the field."""
    document = base_manifest()
    document["cuda_nvcc"]["linux-x86_64"][field] = value
    line = refused(site.install(site.mirror("field", document)))
    assert named in line and "cuda_nvcc" in line
    assert not site.managed.exists() or os.listdir(site.managed) == []


@pytest.mark.parametrize("key, value", [("cuda_nvcc", "13.1\n"), ("cuda_nvcc", 13.1), ("../../x", "1.0")])
def test_component_names_and_versions_are_checked(site, key, value):
    document = base_manifest()
    document.setdefault(key, dict(document["cuda_nvcc"]))["version"] = value
    line = refused(site.install(site.mirror("component", document)))
    assert "is not digits and dots" in line or "is not a plain name" in line


# --- modulefiles: manifest text stays text ---------------------------------------------------------------

INJECTED = '13.1.115]]) os.execute("touch {canary}/lua") --'


def test_hostile_nvcc_version_on_a_real_mirror_never_reaches_a_modulefile(site):
    """The real 13.1.2 archives with the manifest's cuda_nvcc version turned into Lua: the old code
    installed it and wrote help([[... 13.1.115]]) os.execute(...) --]]) into cuda/13.1.lua, which
    Lmod ran on every `module avail`. Now the manifest is refused, and `module avail` on the
    modulefile dir runs nothing."""
    real = redist_mirror.mirror() / "compute" / "cuda" / "redist"
    document = json.loads((real / "redistrib_13.1.2.json").read_text())
    document["cuda_nvcc"]["version"] = INJECTED.format(canary=site.canary)
    mirror = site.mirror("real", document, release="13.1.2")
    for component in real.iterdir():
        if component.is_dir():
            (mirror / component.name).symlink_to(component)
    prefix = site.site / "opt" / "cuda" / "13.1"
    line = refused(site.install(mirror, "--prefix", str(prefix), "--modulefile", str(site.modules),
                                request="13.1", timeout=900))
    assert "cuda_nvcc's version" in line and "is not digits and dots" in line
    lmod = kits.require("lmod")
    subprocess.run([lmod, "bash", "avail"], env=kits.lmod_env(site.modules, site.host.env), capture_output=True,
                   timeout=120)
    assert tree(site.canary) == set() and tree(site.modules) == set() and not prefix.exists()


HOSTILE_TEXT = [
    '13.1.115]]) os.execute("touch {c}/a") --', '13.1.115]==]) os.execute("touch {c}/b") --[==[',
    '13.1.115") os.execute("touch {c}/c") --', "13.1.115\nos.execute('touch {c}/d')", "13.1.115 \\\" ..",
    "[exec touch {c}/e]", "$([exec touch {c}/f])", '" ; exec touch {c}/g ; "', "} ; exec touch {c}/h ; {",
    "{ unbalanced", "unbalanced }", "\\", "a\\\nexec touch {c}/i", "\x00\x01\x1b[2J\x7f", "tab\there",
    "\r\nexec touch {c}/j", "uni ü ✓", "$root ${root} $env(HOME)",
]


def hostile_modulefiles(site, root):
    """One modulefile pair per hostile text (CUDA 13.<n>.0), written by the real writer."""
    from cudaswitch.install import redist_site

    written = {}
    for index, text in enumerate(HOSTILE_TEXT):
        release = "13.%d.0" % (index + 10)
        redist_site.write_modulefiles(str(site.modules), release, text.replace("{c}", str(site.canary)), str(root))
        written["cuda/13.%d" % (index + 10)] = text
    return written


@pytest.fixture
def odd_root(site):
    """A toolkit root with quotes, $, brackets, braces and a space in its name (the writer must
    quote it; --prefix itself refuses such names, so this goes to the writer directly)."""
    root = site.site / 'r o\'o"t$x[1]{2}\\3'
    (root / "bin").mkdir(parents=True)
    (root / "lib64").mkdir()
    return root


def loaded_env(tool, modules, name, base_env):
    """CUDA_HOME, PATH and LD_LIBRARY_PATH of a bash that evaluated `<tool> bash load <name>`."""
    script = 'eval "$(%s bash load %s)" && printf "%%s\\0" "$CUDA_HOME" "$PATH" "$LD_LIBRARY_PATH"' % (tool, name)
    env = dict(base_env, PATH="/usr/bin:/bin", MODULEPATH=str(modules))
    env.pop("CUDASWITCH_ROOT", None)
    out = subprocess.run([kits.require("bash"), "--noprofile", "--norc", "-c", script], env=env,
                         capture_output=True, timeout=120)
    assert out.returncode == 0, out.stderr.decode()
    return out.stdout.decode().split("\0")[:3]


def check_tool(site, tool, env, written, root):
    for args in (["avail"], ["-t", "avail"], ["whatis"], ["help"] + list(written)):
        subprocess.run([tool, "bash", *args], env=env, capture_output=True, timeout=120)
    for name in written:
        home, path, libs = loaded_env(tool, site.modules, name, env)
        assert home == str(root), (name, home)
        assert path.split(":")[0] == "%s/bin" % root and libs.split(":")[0] == "%s/lib64" % root
    assert tree(site.canary) == set()


def test_hostile_text_in_lua_modulefiles_stays_text_for_real_lmod(site, odd_root):
    """Every value goes through Lua string quoting: `module avail`, `whatis`, `help` and `load` of
    each file run nothing, and load sets CUDA_HOME, PATH and LD_LIBRARY_PATH to the root exactly."""
    written = hostile_modulefiles(site, odd_root)
    lmod = kits.require("lmod")
    check_tool(site, lmod, kits.lmod_env(site.modules, site.host.env), written, odd_root)
    help_text = subprocess.run([lmod, "bash", "help", "cuda/13.10"], env=kits.lmod_env(site.modules, site.host.env),
                               capture_output=True, text=True, timeout=120).stderr
    assert 'NVIDIA CUDA Toolkit 13.1.115]]) os.execute("touch' in help_text


def test_hostile_text_in_tcl_modulefiles_stays_text_for_real_environment_modules(site, odd_root):
    """Every value goes through Tcl double-quote quoting (\\ " $ [ ] { } escaped, control characters
    as \\uHHHH): Environment Modules' avail, whatis, help and load run nothing."""
    written = hostile_modulefiles(site, odd_root)
    modulecmd = str(kits.environment_modules())
    env = {k: v for k, v in site.host.env.items() if not k.startswith(("LMOD", "MODULE"))}
    check_tool(site, modulecmd, env, written, odd_root)
    said = subprocess.run([modulecmd, "bash", "help", "cuda/13.19"], env=dict(env, MODULEPATH=str(site.modules)),
                          capture_output=True, text=True, timeout=120).stderr
    assert "NVIDIA CUDA Toolkit { unbalanced" in said


def test_normal_modulefile_loads_and_is_recognised_for_uninstall(site):
    """The plain case still works in both tools, and the writer knows its own files (and the bracket
    form older versions wrote) so uninstall removes them and a rewrite for another root is refused."""
    from cudaswitch.errors import CudaSwitchError
    from cudaswitch.install import redist_site

    root = site.site / "opt" / "cuda" / "13.1"
    (root / "bin").mkdir(parents=True)
    (root / "lib64").mkdir()
    lua, tcl = redist_site.write_modulefiles(str(site.modules), "13.1.2", "13.1.2 (nvcc 13.1.115)", str(root))
    for tool, env in ((kits.require("lmod"), kits.lmod_env(site.modules, site.host.env)),
                      (str(kits.environment_modules()), site.host.env)):
        assert loaded_env(tool, site.modules, "cuda/13.1", env)[0] == str(root)
    assert 'local root = "%s"' % root in Path(lua).read_text() and 'set root "%s"' % root in Path(tcl).read_text()
    with pytest.raises(CudaSwitchError, match="loads another toolkit"):
        redist_site.write_modulefiles(str(site.modules), "13.1.2", "x", str(site.site / "other"))
    Path(lua).write_text("local root = [==[%s]==]\n" % root)  # as an older cudaswitch wrote it
    redist_site.remove_site_files(str(root), {"modulefiles": [lua, tcl]})
    assert tree(site.modules) == {"cuda"}


def test_writer_refuses_a_release_that_is_no_version(site):
    from cudaswitch.errors import CudaSwitchError
    from cudaswitch.install import redist_site

    for release in ("../../x", "13.1/..", "13.1]]) os.execute('x') --"):
        with pytest.raises(CudaSwitchError):
            redist_site.write_modulefiles(str(site.modules), release, "x", str(site.site))
    assert tree(site.modules) == set()


# --- bounded documents, one-line errors, inert text ----------------------------------------------------------


def test_manifest_over_the_cap_is_refused_from_http(site):
    """A mirror answering with a 9 MiB manifest (a 1 GiB one was read and parsed whole): refused
    with one line, over http from 127.0.0.1."""
    body = json.dumps(base_manifest()).encode()
    root = site.mirror("huge", body[:-1] + b', "pad": "' + b" " * (9 << 20) + b'"}').parents[2]
    served = redist_mirror.Mirror(root)
    try:
        line = refused(site.install(served.url))
    finally:
        served.close()
    assert "MiB" in line and ("not a redistrib manifest" in line or "larger" in line or "over" in line)


@pytest.mark.parametrize("data", [b"[" * 200000 + b"]" * 200000, b'{"a": ' * 200000 + b"1" + b"}" * 200000,
                                  b"[" * 200000], ids=["array", "object", "unterminated"])
def test_manifest_nested_200000_deep_is_one_line(site, data):
    """json.loads raised RecursionError (a traceback) on a manifest nested 200,000 deep."""
    assert "nests deeper than" in refused(site.install(site.mirror("deep", data)))


@pytest.mark.parametrize("url", ["http://[::1", "http://host:port/", "http://h/\x1b[2J"])
def test_bad_redist_url_in_config_is_one_line_naming_the_key(site, url):
    """`redist_url = "http://[::1"` in config.toml raised ValueError from urlsplit in every install."""
    config = site.host.work / "config"
    config.mkdir(parents=True)
    (config / "config.toml").write_text('redist_url = %s\n' % json.dumps(url))
    proc = site.host.run("install", "12.4")
    assert "redist_url" in refused(proc)
    assert "--mirror" in refused(site.host.run("install", "12.4", "--mirror", url))


def test_manifest_text_is_never_printed_raw(site):
    """A release_date, a component name or version holding terminal escapes reached the terminal
    through `install --list` and the install's own lines; now they are refused, quoted escaped."""
    for field in ("release_date", "name", "version"):
        document = base_manifest()
        if field == "release_date":
            document["release_date"] = "2030" + ESC
        else:
            document["cuda_nvcc"][field] = "77.1.1" + ESC
        mirror = site.mirror(field, document)
        for args in (["install", RELEASE], ["install", "--list"], ["install", "--list", "--json"]):
            proc = site.host.run(*args, "--mirror", mirror.as_uri())
            assert "\\x1b" in refused(proc)


def test_a_planted_cache_is_checked_like_the_mirror(site):
    """The manifest cache is a file anyone with the account could have left: a cached manifest with
    a path label is not used (the mirror's is read again), a cached index of paths not offline."""
    from cudaswitch.errors import CudaSwitchError
    from cudaswitch.install import redist
    from cudaswitch.paths import Paths

    mirror = site.mirror("cache", base_manifest())
    paths = Paths(site.host.env)
    cache = redist.ManifestCache(paths.cache_dir, redist.normalize_base(str(mirror)))
    os.makedirs(cache.dir)
    Path(cache.dir, "redistrib_%s.json" % RELEASE).write_text(json.dumps(labelled("/tmp/x")))
    assert cache.manifest(RELEASE)["release_label"] == RELEASE
    offline = redist.ManifestCache(paths.cache_dir, "file:///nowhere/")
    os.makedirs(offline.dir)
    Path(offline.dir, "index.json").write_text(json.dumps({"base": "file:///nowhere/", "releases": ["../x"]}))
    with pytest.raises(CudaSwitchError):
        offline.releases()
    with pytest.raises(CudaSwitchError):
        offline.manifest("../../x")


# --- the generated corpus ---------------------------------------------------------------------------


def run_case(site, index, data, served):
    """(problems, seconds) of one hostile manifest through the real install, in-process."""
    from cudaswitch.errors import CudaSwitchError
    from cudaswitch.install import installer
    from cudaswitch.paths import Paths

    base = site.mirror("c%04d" % index, data)
    mirror = served.base + os.path.relpath(base, served.root) + "/" if index % 2 else str(base)
    site_args = {"prefix": str(site.site / "opt" / "cuda" / "77.1"), "modulefile": str(site.modules)} \
        if index % 3 == 0 else {}
    lines, started = [], time.monotonic()
    try:
        installer.install(Paths(site.host.env), dict(site.host.env), RELEASE, progress=lines.append,
                          mirror=mirror, **site_args)
        problems = ["it installed"]
    except CudaSwitchError as exc:
        lines.append(exc.render())
        problems = []
    except BaseException:  # noqa: B036 (any other exception is the traceback a user would see)
        problems = ["traceback: " + traceback.format_exc()[-400:]]
    for line in lines:
        if "\n" in line or any(c in line for c in RAW_CONTROL):
            problems.append("raw control characters shown: %r" % line[:120])
    return problems, time.monotonic() - started


ALLOWED_NEW = {".local", ".local/share", ".local/share/cudaswitch", ".local/share/cudaswitch/toolkits",
               ".local/share/cudaswitch/toolkits/.lock-77.1.0", ".cache", ".cache/cudaswitch"}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    site = Site(tmp_path_factory.mktemp("manifest-corpus"))
    return site, generate(SIZE, SEED, site.canary, HOME_DEPTH)


def test_generated_hostile_manifests_write_nothing_outside_and_never_trace(corpus):
    """>= 300 seeded hostile manifests (labels that are paths, versions that are Lua, Tcl or shell,
    wrong types, escapes, huge and deep documents) through the real plan and install, half over
    http from 127.0.0.1, a third as site installs with --prefix and --modulefile: the canary dir
    stays empty, $HOME, /tmp, the site tree and the modulefile dir gain nothing but cudaswitch's
    cache and lock files, no case installs, traces or shows a raw control character, each ends in
    CASE_LIMIT seconds."""
    site, cases = corpus
    assert len(cases) >= 300 or SIZE < 300
    home_before, tmp_before = tree(site.home), set(os.listdir("/tmp"))
    mirrors = site.host.work.parent / "mirrors"
    mirrors.mkdir()
    served = redist_mirror.Mirror(mirrors)
    failures, slowest = [], 0.0
    try:
        for index, (data, tried) in enumerate(cases):
            problems, seconds = run_case(site, index, data, served)
            slowest = max(slowest, seconds)
            if seconds > CASE_LIMIT:
                problems.append("took %.1f s" % seconds)
            if problems:
                failures.append("case %d (%s): %s" % (index, tried, "; ".join(problems)))
    finally:
        served.close()
    assert failures == [], "\n".join(failures[:20])
    assert tree(site.canary) == set()
    new_home = tree(site.home) - home_before
    assert {p for p in new_home if not p.startswith(".cache/cudaswitch/")} <= ALLOWED_NEW, sorted(new_home)[:20]
    assert [n for n in set(os.listdir("/tmp")) - tmp_before if site.canary.name in n] == []
    assert tree(site.site) <= {"opt", "opt/cuda", "opt/cuda/.lock-77.1"} and tree(site.modules) == set()


def test_part_of_the_corpus_through_the_command(corpus, tmp_path):
    """Every 20th case through `cudaswitch install 77.1.0 --mirror file://... --prefix --modulefile`:
    exit 1 or 2, stdout empty, one error line last, no traceback and no raw escape on stderr."""
    site_dirs = Site(tmp_path)
    _, cases = corpus
    for index, (data, tried) in list(enumerate(cases))[::20]:
        mirror = site_dirs.mirror("cli%04d" % index, data)
        proc = site_dirs.install(mirror, "--prefix", str(site_dirs.site / "opt" / "cuda" / "77.1"),
                                 "--modulefile", str(site_dirs.modules), timeout=CASE_LIMIT * 4)
        assert proc.returncode in (1, 2), (index, tried, proc.stderr)
        refused(proc)
    assert tree(site_dirs.canary) == set() and tree(site_dirs.modules) == set()
    assert tree(site_dirs.site) <= {"opt", "opt/cuda", "opt/cuda/.lock-77.1"}
    shutil.rmtree(site_dirs.host.work.parent / "mirrors", ignore_errors=True)


def test_quoting_gives_back_every_string_in_real_lua_and_tcl(tmp_path):
    """The quoting functions themselves, against the interpreters Lmod and Environment Modules run:
    500 seeded strings of brackets, quotes, backslashes, `$`, braces, control and non-ASCII
    characters come back exactly from `lua` (byte for byte, surrogate-escaped bytes included) and
    from `tclsh` (character for character; beyond U+FFFF it refuses)."""
    import random

    from cudaswitch.errors import UsageError
    from cudaswitch.install.redist_site import lua_string, tcl_string

    rng = random.Random(22)
    alphabet = list("]]==[[\"'\\$[]{}();#-\n\r\t\x00\x01\x1b\x7f ~`") + ["ü", "✓", "\u202e", "\udcff", "😀", "0", "9"]
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 30))) for _ in range(500)]
    lua = tmp_path / "t.lua"
    lua.write_text("".join("io.write(%s, '\\2')\n" % lua_string(t) for t in texts))
    out = subprocess.run([kits.require("lua"), str(lua)], capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split(b"\2")[:-1] == [os.fsencode(t) for t in texts]
    tcl_texts, refused_texts = [], 0
    for text in texts:
        try:
            tcl_texts.append((text, tcl_string(text)))
        except UsageError:
            refused_texts += 1
            assert any(ord(c) > 0xFFFF or "\ud800" <= c <= "\udfff" for c in text)
    tcl = tmp_path / "t.tcl"
    tcl.write_text("fconfigure stdout -encoding utf-8 -translation lf\n" + "".join(
        "puts -nonewline %s; puts -nonewline \\u0002\n" % quoted for _, quoted in tcl_texts))
    out = subprocess.run([kits.require("tclsh"), str(tcl)], capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.decode("utf-8").split("\x02")[:-1] == [text for text, _ in tcl_texts]
    assert refused_texts < len(texts)
