"""The large synthetic host of the budgets: 50 toolkits, 200 conda envs with CUDA records and 300
Lmod modulefiles, all under one CUDASWITCH_ROOT (550 candidates).

Real parts where they are cheap (hardlinks from the kits cache): CUDA 13.0 and 13.1 in the NVIDIA
runfile layout and two conda envs with conda-forge's cuda-nvcc 13.0. The other 48 toolkits and 198
envs are small hand-made trees that mirror the same layouts (kits._classic_skeleton and
kits._conda_nvcc13): version.json, a libcudart soname chain, include/, and an `nvcc` that answers
`--version` as NVIDIA's does. What discovery reads is all there; the gigabytes it never reads are not.
"""

import json
import os
from pathlib import Path

from tests import kits

# Released CUDA versions (44), plus 4 site copies of popular ones under /opt/apps: 48 hand-made trees.
RELEASES = ("10.2.89 11.0.3 11.1.1 11.2.0 11.2.1 11.2.2 11.3.0 11.3.1 11.4.0 11.4.1 11.4.2 11.4.3 11.4.4 "
            "11.5.0 11.5.1 11.5.2 11.6.0 11.6.1 11.6.2 11.7.0 11.7.1 11.8.0 12.0.0 12.0.1 12.1.0 12.1.1 "
            "12.2.0 12.2.1 12.2.2 12.3.0 12.3.1 12.3.2 12.4.0 12.4.1 12.5.0 12.5.1 12.6.0 12.6.1 12.6.2 "
            "12.6.3 12.8.0 12.8.1 12.9.0 12.9.1").split()
SITE_COPIES = ("11.8.0", "12.4.1", "12.6.3", "12.9.1")
CONDA_VERSIONS = ("11.8.89", "12.0.76", "12.1.105", "12.2.140", "12.3.107", "12.4.131", "12.5.82",
                  "12.6.85", "12.8.93", "12.9.86", "13.0.88")
MODULE_VARIANTS = ("cuda/{v}", "cuda/{v}-gcc11", "cuda/{v}-gcc12", "cudatoolkit/{v}", "cudatoolkit/{v}-gcc11",
                   "cudatoolkit/{v}-gcc12")
HOME = "/home/bench"
N_CONDA = 200


def nvcc_version(sdk):
    """A plausible nvcc component version for an SDK release: 12.4.1 -> 12.4.131."""
    major, minor, patch = sdk.split(".")
    if int(patch) >= 10:  # 10.2.89: old releases carried the build number as the patch level
        return sdk
    return "%s.%s.%d" % (major, minor, 100 + int(patch) * 10 + int(minor))


def _write(path, text, mode=0o644):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)


def _fake_nvcc(path, version):
    major, minor, _ = version.split(".")
    _write(path, "#!/bin/sh\necho 'nvcc: NVIDIA (R) Cuda compiler driver'\n"
                 "echo 'Cuda compilation tools, release %s.%s, V%s'\n" % (major, minor, version), 0o755)


def _cudart(libdir, full):
    """libcudart.so.<full>, its soname link and the dev link, as NVIDIA's packages lay them out."""
    major = full.split(".")[0]
    _write(libdir / ("libcudart.so." + full), "stand-in for libcudart %s\n" % full)
    os.symlink("libcudart.so." + full, libdir / ("libcudart.so." + major))
    os.symlink("libcudart.so." + major, libdir / "libcudart.so")


def classic_toolkit(dest, sdk):
    """A /usr/local/cuda-X.Y tree as NVIDIA's runfile leaves it, minus the bulk."""
    nvcc = nvcc_version(sdk)
    target = dest / kits.TRIPLE
    _cudart(target / "lib", nvcc)
    _write(target / "include" / "cuda_runtime.h", "/* stand-in */\n")
    os.symlink(kits.TRIPLE + "/include", dest / "include")
    os.symlink(kits.TRIPLE + "/lib", dest / "lib64")
    _fake_nvcc(dest / "bin" / "nvcc", nvcc)
    _write(dest / "bin" / "ptxas", "#!/bin/sh\n", 0o755)
    _write(dest / "version.json", json.dumps({
        "cuda": {"name": "CUDA SDK", "version": sdk},
        "cuda_nvcc": {"name": "CUDA NVCC", "version": nvcc},
        "cuda_cudart": {"name": "CUDA Runtime (cudart)", "version": nvcc}}, indent=3))


def conda_env(dest, nvcc):
    """A conda-forge env with cuda-nvcc (CUDA 12+ packaging: targets/x86_64-linux, records in
    conda-meta) plus the python and pip every env has."""
    major_minor = ".".join(nvcc.split(".")[:2])
    target = dest / kits.TRIPLE
    _cudart(target / "lib", nvcc)
    os.makedirs(dest / "lib")
    os.symlink("../%s/lib/libcudart.so.%s" % (kits.TRIPLE, nvcc.split(".")[0]),
               dest / "lib" / ("libcudart.so." + nvcc.split(".")[0]))
    _write(target / "include" / "cuda_runtime.h", "/* stand-in */\n")
    _fake_nvcc(dest / "bin" / "nvcc", nvcc)
    for tool in ("python", "pip"):
        _write(dest / "bin" / tool, "#!/bin/sh\necho conda-%s\n" % tool, 0o755)
    for name, version, build in (("cuda-nvcc", nvcc, "0"), ("cuda-version", major_minor, "3"),
                                 ("cuda-cudart", nvcc, "0"), ("python", "3.11.9", "hb806964_0_cpython")):
        _write(dest / "conda-meta" / ("%s-%s-%s.json" % (name, version, build)),
               json.dumps({"name": name, "version": version, "build": build, "depends": [], "files": []}))


class LargeHost:
    def __init__(self, work, base_env, lmod):
        self.work = Path(work) / "large"
        self.root = self.work / "root"
        self.modulepath = self.work / "modules"
        self.toolkits = self._toolkits()
        self.conda_envs = self._conda_envs()
        self.modulefiles = self._modulefiles() if lmod else 0
        from bench.scenario import cudaswitch_env

        self.env = cudaswitch_env(base_env, self.root, self.work)
        self.env["HOME"] = HOME
        if lmod:
            self.env.update(kits.lmod_env(self.modulepath))

    def host(self, path):
        return self.root / path.lstrip("/")

    def _toolkits(self):
        """{module version: root}: real 13.0 and 13.1, 22 under /usr/local, 26 under /opt/apps/cuda."""
        roots = {}
        for minor in ("13.0", "13.1"):
            roots[minor] = self.host("/usr/local/cuda-" + minor)
            kits.install_classic(kits.cuda13(minor), roots[minor], minor)
        os.symlink("/usr/local/cuda-13.1", self.host("/usr/local/cuda"))
        for index, sdk in enumerate(RELEASES):
            where = "/usr/local/cuda-%s" if index % 2 == 0 else "/opt/apps/cuda/%s"
            roots[sdk] = self.host(where % sdk)
            classic_toolkit(roots[sdk], sdk)
        for sdk in SITE_COPIES:
            roots[sdk + "-site"] = self.host("/opt/apps/cuda/%s-site" % sdk)
            classic_toolkit(roots[sdk + "-site"], sdk)
        return roots

    def _conda_envs(self):
        envs = self.host(HOME + "/miniconda3/envs")
        made = [kits.conda_env(envs / name, "cuda-nvcc-13") for name in ("cu13-a", "cu13-b")]
        for index in range(N_CONDA - len(made)):
            made.append(envs / ("proj%03d" % index))
            conda_env(made[-1], CONDA_VERSIONS[index % len(CONDA_VERSIONS)])
        listing = "".join("%s\n" % (HOME + "/miniconda3/envs/" + p.name) for p in made)
        _write(self.host(HOME + "/.conda/environments.txt"), listing)  # conda writes this on create
        return len(made)

    def _modulefiles(self):
        """Six modulefiles per toolkit (cuda/ and cudatoolkit/, plain and per-compiler builds), written
        by kits.write_cuda_module in a staging dir and moved under their package name."""
        staging = self.work / "staging"
        for version, root in self.toolkits.items():
            for variant in MODULE_VARIANTS:
                package, name = variant.format(v=version).split("/")
                written = kits.write_cuda_module(staging, name, root)
                dest = self.modulepath / package / written.name
                dest.parent.mkdir(parents=True, exist_ok=True)
                os.rename(written, dest)
        return sum(1 for _ in self.modulepath.glob("*/*.lua"))
