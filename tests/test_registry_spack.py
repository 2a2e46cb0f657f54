"""The spack source: toolkits that `spack install cuda@X` put in an install tree, read from Spack's
own database (`<root>/.spack-db/index.json`) without running spack, in the three database shapes
Spack has written since v0.17; the install tree roots the config scopes name and the upstreams
upstreams.yaml names; an unreadable config or database is one info line, never a traceback.

Since v0.20 Spack writes no modulefiles unless a site turns them on (its CHANGELOG: "Module file
generation is disabled by default", #37258), so a plain `spack install cuda` is seen by no module
source. Each host mirrors a cluster user's: a Spack clone (SPACK_ROOT, or its bin/ on PATH), installs
under `$spack/opt/spack` laid out by Spack's default projection, a site tree, an upstream
instance, and the CUDA that the admin registered as an external (`packages.yaml` `externals:`),
which lives in /usr/local/cuda-12.4. The toolkit trees are real (tests/kits.py: NVIDIA's wheels
in the classic layout the cuda package's runfile install gives).

Where the shapes come from (read in spack/spack, described here, not copied):
- `lib/spack/spack/database.py`: `_DB_VERSION`; the file is {"database": {"version": str,
  "installs": {dag hash: record}}}; a record holds "spec" (the node dict with hashes), "ref_count",
  "path", "installed", "explicit", "installation_time" and, when set, "deprecated_for";
  `InstallRecord.from_dict` notes that old databases may have "None" for an external's path and
  takes a missing "installed" as False.
- `lib/spack/spack/spec.py` `to_node_dict`: "name", "version" (a concrete spec's one version as a
  string), "arch", "namespace", "parameters", "package_hash", "dependencies", and for an external
  "external": {"path", "module", "extra_attributes"}.
"""

import json
import os

from cudaswitch.envstate import OUTER_NAMES
from cudaswitch.registry.discover import ENV_KEYS
from tests import kits
from tests.shellrun import script

HOME = "/home/tester"
LIBXML2 = "5nyqnwxcxhbntvuocqtbmhmcquaxkv3k"
HASHES = {"13.1.0": "ghrbxrygqmwfkx3cj4wzzxi7bjg6sh5s", "13.0.0": "3l2nesclnvbqhmq2f6yj4cydxk3vbhtn",
          "12.8.1": "t5f7adrknxqkbz6vsipdtcupg7xo2bmh", "12.4.1": "wjptmssdhbw2aomfa6cb5ubsdbbe3jr7",
          "11.8.0": "q6zxjd2t7l5m3yiwg4aeukbvfnco4rps"}
CUDA124 = {"path": "/usr/local/cuda-12.4", "module": None, "extra_attributes": {}}
CUDA118_MODULE = {"path": None, "module": ["cuda/11.8"], "extra_attributes": {}}  # an external by module only
TARGET = {"name": "skylake_avx512", "vendor": "GenuineIntel", "features": ["avx512f", "avx512bw", "fma"],
          "generation": 0, "parents": ["skylake"]}


def node(shape, name, version, digest, external=None):
    """A spec node as the Spack release that writes database `shape` writes one."""
    spec = {"name": name, "version": version, "arch": {
        "platform": "linux", "platform_os": "ubuntu22.04", "target": "x86_64_v3" if shape == 8 else dict(TARGET)}}
    if shape < 8:  # before 1.0 the compiler is a node attribute; from 1.0 it is a build dependency
        spec["compiler"] = {"name": "gcc", "version": "11.4.0"}
    spec["namespace"] = "builtin"
    spec["parameters"] = {"allow-unsupported-compilers": False, "build_system": "generic", "dev": False,
                          "cflags": [], "cppflags": [], "cxxflags": [], "fflags": [], "ldflags": [], "ldlibs": []}
    if external:
        spec["external"] = external
    else:
        spec["package_hash"] = "fkgmhfb4ygcpvmf6obywulcb7cnfrrkbtqxkxxl6iszpbj3kw6ha===="
    if name == "cuda" and not external:
        edge = {"name": "libxml2", "hash": LIBXML2}
        if shape == 6:
            edge["type"] = ["build", "link"]
        else:  # specfile v4 on: edges carry their deptypes and the virtuals they provide
            edge["parameters"] = {"deptypes": ["build", "link"], "virtuals": []}
        spec["dependencies"] = [edge]
    if shape == 8:
        spec["annotations"] = {"original_specfile_version": 5}
    spec["hash"] = digest
    return spec


def prefix_of(shape, root, name, version, digest):
    """Where Spack's default projection puts an install: before 1.0
    `{architecture}/{compiler.name}-{compiler.version}/{name}-{version}-{hash}`, from 1.0
    `{architecture.platform}-{architecture.target}/{name}-{version}-{hash}`."""
    if shape == 8:
        return "%s/linux-x86_64_v3/%s-%s-%s" % (root, name, version, digest)
    return "%s/linux-ubuntu22.04-skylake_avx512/gcc-11.4.0/%s-%s-%s" % (root, name, version, digest)


def write_database(host, shape, root, records):
    """index.json as Spack writes it (compact JSON, replaced through a rename), from
    (name, version, hash, path, installed, external node entry or None) tuples."""
    installs = {}
    for name, version, digest, path, installed, external in records:
        installs[digest] = {"spec": node(shape, name, version, digest, external), "ref_count": 0, "path": path,
                            "installed": installed, "explicit": name == "cuda", "installation_time": 1714000000.5}
    index = host.path(root + "/.spack-db/index.json")
    index.parent.mkdir(parents=True, exist_ok=True)
    tmp = index.with_name("index.json.tmp")
    tmp.write_text(json.dumps({"database": {"version": str(shape), "installs": installs}}, separators=(",", ":")))
    os.replace(tmp, index)


def spack_host(host, shape, root="/opt/spack/opt/spack"):
    """SPACK_ROOT=/opt/spack with no config of its own (the default root), holding: cuda 13.1
    installed; cuda 13.0 whose prefix is there but recorded as not installed (Database._add does
    that when the prefix holds no finished install, e.g. after an interrupted one); cuda 12.8.1
    installed but its prefix removed by hand; cuda 12.4.1 an external in /usr/local/cuda-12.4
    (its record's path is that path, as `_add` writes for an external with a path); cuda 11.8.0
    an external given as a module only (path null); libxml2, which is not CUDA. Returns the
    prefixes by version."""
    host.env["SPACK_ROOT"] = "/opt/spack"
    prefixes = {v: prefix_of(shape, root, "cuda", v, HASHES[v]) for v in ("13.1.0", "13.0.0", "12.8.1")}
    kits.install_classic(kits.cuda13("13.1"), host.path(prefixes["13.1.0"]), "13.1")
    kits.install_classic(kits.cuda13("13.0"), host.path(prefixes["13.0.0"]), "13.0")
    kits.install_classic_runtime12(host.path("/usr/local/cuda-12.4"))
    libxml2 = prefix_of(shape, root, "libxml2", "2.10.3", LIBXML2)
    host.path(libxml2 + "/lib").mkdir(parents=True)
    write_database(host, shape, root, [
        ("cuda", "13.1.0", HASHES["13.1.0"], prefixes["13.1.0"], True, None),
        ("cuda", "13.0.0", HASHES["13.0.0"], prefixes["13.0.0"], False, None),
        ("cuda", "12.8.1", HASHES["12.8.1"], prefixes["12.8.1"], True, None),
        ("cuda", "12.4.1", HASHES["12.4.1"], "/usr/local/cuda-12.4", True, CUDA124),
        ("cuda", "11.8.0", HASHES["11.8.0"], None, True, CUDA118_MODULE),
        ("libxml2", "2.10.3", LIBXML2, libxml2, True, None)])
    return {v: str(host.path(p)) for v, p in prefixes.items()}


def lists_only_the_installed_toolkit(host, prefixes):
    items = host.list_json()
    installed = items[prefixes["13.1.0"]]
    assert (installed["sources"], installed["status"], installed["short"]) == (["spack"], "ok", "13.1")
    external = items[str(host.path("/usr/local/cuda-12.4"))]
    assert external["sources"] == ["system"]  # found where it lives, not through Spack
    assert sorted(items) == sorted([prefixes["13.1.0"], str(host.path("/usr/local/cuda-12.4"))])
    assert host.run("which", "spack:13", check=True).stdout == prefixes["13.1.0"] + "\n"
    missing = host.run("which", "spack:13.0")  # not installed: no match, though its prefix is there
    assert missing.returncode == 1 and missing.stdout == ""
    assert "no toolkit matches 'spack:13.0' in spack (found in spack: 13.1." in missing.stderr


def test_database_v6_as_spack_0_17_to_0_19_writes_it(host):
    """Version 6: `_db_version` went from 5 to 6 in September 2021 (commit d83f7110, the spec.json
    change of PR #22845), first released in v0.17.0 (November 2021); v0.16.2 refuses it ("Expected
    database version 5 but found version 6", PR #25707). Nodes as v0.19 writes them (its test
    data `specfiles/hdf5.v019.json`): "version" a string, "compiler" {"name", "version"},
    dependency edges with "type"."""
    lists_only_the_installed_toolkit(host, spack_host(host, 6))


def test_database_v7_as_spack_0_20_to_0_23_writes_it(host):
    """Version 7: PR #34821 ("Add virtual information on DAG edges", "bumps format of specfile,
    and thus of lockfile and database") made edges {"name", "hash", "parameters": {"deptypes",
    "virtuals"}}; database.py maps database 7 to SpecfileV4. It shipped in v0.20.0: PR #37614,
    merged ten days before that release, gives older Spacks a clear error for a database "too new"
    after #34821, and was asked to be backported to 0.19. Spack 0.23.1 still expects 7 (issue
    #49791: "The expected DB version is '7', but '8' was found")."""
    lists_only_the_installed_toolkit(host, spack_host(host, 7))


def test_database_v8_as_spack_1_0_writes_it_and_an_uninstall_is_seen(host):
    """Version 8: PR #45189 ("Turn compilers into nodes", Spack v1.0.0) "requires a version bump
    for our Specfile, Database, and Lockfile formats"; a develop Spack wrote the 8 that 0.23.1
    refused in issue #49791. The stored database.py is the version-7 one and the v7->v8 test
    database in Spack's repository is gzipped (not readable here), so the v8 node is built from
    spec.py's `to_node_dict` at the v1.x commit: no "compiler" key, "annotations":
    {"original_specfile_version": 5}, a generic target as a string. `spack uninstall` rewrites
    index.json: the next `list` (no --refresh) no longer has it."""
    prefixes = spack_host(host, 8)
    lists_only_the_installed_toolkit(host, prefixes)
    write_database(host, 8, "/opt/spack/opt/spack", [
        ("cuda", "13.1.0", HASHES["13.1.0"], prefixes["13.1.0"], False, None)])
    assert prefixes["13.1.0"] not in host.list_json()


def test_use_spack_in_real_bash_compiles_with_the_spack_toolkit(host, tmp_path):
    """`use spack:13.1` in bash: the first nvcc is the Spack prefix's, `nvcc --version` says 13.1,
    and a one-kernel program compiles and links."""
    kits.require("gcc")
    prefixes = spack_host(host, 8)
    (tmp_path / "k.cu").write_text("__global__ void k(float *x) { x[threadIdx.x] *= 2.0f; }\n"
                                   "int main() { float *d; cudaMalloc(&d, 4); k<<<1, 1>>>(d); return 0; }\n")
    proc = script("bash", ['eval "$(cudaswitch use spack:13.1 --shell bash)"', "command -v nvcc",
                           "nvcc --version | grep release", "nvcc k.cu -o k && echo COMPILED"],
                  dict(host.env), timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    where, release, compiled = proc.stdout.splitlines()
    assert where == prefixes["13.1.0"] + "/bin/nvcc"
    assert "release 13.1," in release and compiled == "COMPILED" and (tmp_path / "k").is_file()


DEFAULTS = """# Spack's defaults scope, abridged: comments, lists, quoted values around the key read here.
config:
  install_tree:
    root: $spack/opt/spack
    projections:
      all: "{architecture.platform}-{architecture.target}/{name}-{version}-{hash}"
    # padded_length: 128
  template_dirs:
    - $spack/share/spack/templates
  build_stage:
  - $tempdir/$user/spack-stage
  - $user_cache_path/stage
  flags:
    keep_werror: 'none'
  build_jobs: 16  # per install
"""


def test_site_root_and_upstream_of_a_spack_found_on_path_are_read_and_spack_is_never_run(host):
    """A user's clone with only its bin/ on PATH (no setup-env.sh, so no SPACK_ROOT): the site
    scope ($spack/etc/spack/config.yaml) moves the root to /scratch/$user/spack, and ~/.spack's
    upstreams.yaml names the center's instance. Both trees' toolkits are listed; `spack` itself,
    which records any run, never runs."""
    spack = host.path(HOME + "/spack")
    marker = host.work / "spack-ran"
    (spack / "bin").mkdir(parents=True)
    (spack / "bin/spack").write_text("#!/bin/sh\ntouch %s\n" % marker)
    (spack / "bin/spack").chmod(0o755)
    (spack / "etc/spack/defaults").mkdir(parents=True)
    (spack / "etc/spack/defaults/config.yaml").write_text(DEFAULTS)
    (spack / "etc/spack/config.yaml").write_text("config:\n  install_tree:\n    root: /scratch/$user/spack\n")
    host.path(HOME + "/.spack").mkdir(parents=True)
    host.path(HOME + "/.spack/upstreams.yaml").write_text(
        "upstreams:\n  center:\n    install_tree: /apps/spack/opt/spack\n"
        "    modules:\n      lmod: /apps/spack/share/spack/lmod\n")
    host.env.update({"PATH": "%s:%s" % (spack / "bin", host.env["PATH"]), "USER": "tester"})
    mine = prefix_of(8, "/scratch/tester/spack", "cuda", "13.1.0", HASHES["13.1.0"])
    center = prefix_of(7, "/apps/spack/opt/spack", "cuda", "13.0.0", HASHES["13.0.0"])
    kits.install_classic(kits.cuda13("13.1"), host.path(mine), "13.1")
    kits.install_classic(kits.cuda13("13.0"), host.path(center), "13.0")
    write_database(host, 8, "/scratch/tester/spack", [("cuda", "13.1.0", HASHES["13.1.0"], mine, True, None)])
    write_database(host, 7, "/apps/spack/opt/spack", [("cuda", "13.0.0", HASHES["13.0.0"], center, True, None)])

    items = host.list_json()
    assert sorted(items) == sorted([str(host.path(mine)), str(host.path(center))])
    assert all(item["sources"] == ["spack"] and item["status"] == "ok" for item in items.values())
    assert host.run("which", "spack:13.0", check=True).stdout == str(host.path(center)) + "\n"
    assert not marker.exists()


def test_unreadable_configs_and_databases_are_one_info_line_each(host):
    """What a YAML library would read but this strict reader does not (flow style in
    ~/.spack/config.yaml, a tab in /etc/spack/config.yaml), a truncated index.json and a database
    from a future Spack: one info line each, no traceback, and the default root's toolkit is
    still listed."""
    prefixes = spack_host(host, 8)
    host.path(HOME + "/.spack").mkdir(parents=True)
    host.path(HOME + "/.spack/config.yaml").write_text("config: {install_tree: {root: /elsewhere}}\n")
    host.path("/etc/spack").mkdir(parents=True)
    host.path("/etc/spack/config.yaml").write_text("config:\n\tinstall_tree: /elsewhere\n")
    host.path("/opt/spack/etc/spack").mkdir(parents=True)
    host.path("/opt/spack/etc/spack/upstreams.yaml").write_text(
        "upstreams:\n  cut:\n    install_tree: /apps/cut\n  future:\n    install_tree: /apps/future\n")
    host.path("/apps/cut/.spack-db").mkdir(parents=True)
    host.path("/apps/cut/.spack-db/index.json").write_text('{"database": {"version": "8", "installs": {')
    host.path("/apps/future/.spack-db").mkdir(parents=True)
    host.path("/apps/future/.spack-db/index.json").write_text('{"database": {"version": "9", "installs": {}}}')

    proc = host.run("list", "--json", check=True)
    assert [item["root"] for item in json.loads(proc.stdout) if "spack" in item["sources"]] == [prefixes["13.1.0"]]
    lines = sorted(proc.stderr.splitlines())
    assert len(lines) == 4 and all(line.startswith("cudaswitch: info: cannot read the Spack ") for line in lines)
    assert "Traceback" not in proc.stderr
    assert "/apps/cut/.spack-db/index.json because it is not JSON" in proc.stderr
    assert "/apps/future/.spack-db/index.json because its version is '9' (6, 7, 8 are read)" in proc.stderr
    assert "%s/.spack/config.yaml because install_tree is not under a plain mapping" % HOME in proc.stderr
    assert "/etc/spack/config.yaml because line 2 is indented with a tab" in proc.stderr


def test_the_state_may_give_back_every_discovery_input():
    """A module swap records discovery's inputs (registry ENV_KEYS) in the state, and the state's
    reader takes only OUTER_NAMES: the two lists are one, written out twice."""
    assert set(ENV_KEYS) == OUTER_NAMES
