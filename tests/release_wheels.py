"""A find-links dir of cuda-toolkit metapackages (releases and release candidates) pinning one
runtime wheel, built with tests/hostile_wheels.py, so the real `install --from pypi` and
`install --list --from pypi` run through pip with no index and no network."""

import zipfile

from tests import hostile_wheels as hw


def metapackage(links, version):
    """cuda-toolkit VERSION (exactly as given: 13.4.0rc1, 13.3.0.0) with a `cudart` extra."""
    pin = "Requires-Dist: %s==%s.*; extra == 'cudart'" % (hw.RUNTIME, hw.RUNTIME_VERSION)
    with zipfile.ZipFile(hw.wheel_path(links, "cuda-toolkit", version), "w", zipfile.ZIP_DEFLATED) as archive:
        hw._dist_info(archive, "cuda-toolkit", version, ["Provides-Extra: cudart", pin], [])


def index_of(links, *versions):
    """`links` holding a metapackage of each version and the runtime wheel they pin."""
    links.mkdir(parents=True, exist_ok=True)
    for version in versions:
        metapackage(links, version)
    hw.runtime_wheel(links, {"include/cuda_runtime.h": b"/* runtime */\n", "lib/libcudart.so.77": b"\x7fELF"})
    return hw.pip_env_with_only(links)
