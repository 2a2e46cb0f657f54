"""The conda source: the three ways conda envs are found (under a known conda root's envs/,
listed in ~/.conda/environments.txt, the active $CONDA_PREFIX) and the old runtime-only
`cudatoolkit` package (no nvcc: incomplete, version from its conda-meta record). The standard host
has only one cuda-nvcc 13 env under ~/miniconda3, so none of these had a test."""

from tests import kits
from tests.conftest import HOME


def test_conda_envs_from_every_place_and_the_old_cudatoolkit(host):
    old = kits.conda_env(host.path(HOME + "/miniconda3/envs/legacy"), "cudatoolkit-11")
    listed = kits.conda_env(host.path("/data/envs/elsewhere"), "cuda-nvcc-13")  # `conda create -p` elsewhere
    active = kits.conda_env(host.path("/scratch/active"), "cuda-nvcc-13")
    (host.path(HOME + "/.conda")).mkdir(parents=True)
    (host.path(HOME + "/.conda/environments.txt")).write_text("/data/envs/elsewhere\n")

    items = host.list_json()
    assert sorted(items) == sorted([str(old), str(listed)])  # /scratch/active is not active yet
    legacy = items[str(old)]
    assert (legacy["version"], legacy["status"], legacy["nvcc"], legacy["sources"]) == \
        ("11.8.0", "incomplete", None, ["conda"])  # cudatoolkit-11.8.0-h6a678d5_0.json
    assert len(legacy["problems"]) == 1 and "no nvcc" in legacy["problems"][0]
    assert items[str(listed)]["status"] == "ok" and items[str(listed)]["sources"] == ["conda"]

    proc = host.run("list", "--json", env={"CONDA_PREFIX": "/scratch/active"}, check=True)
    assert str(active) in proc.stdout  # $CONDA_PREFIX is watched: no --refresh needed
    assert host.run("which", "conda:11", check=True).stdout == str(old) + "\n"
