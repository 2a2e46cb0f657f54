"""The live host's /proc files say their size is 0 but hold text: /proc/driver/nvidia/version on
every NVIDIA host (an H200 machine read as "no NVIDIA kernel module is loaded" while its GPU ran
kernels), /proc/modules, /proc/version. Only those, under their own names: a link to them from an
image or a project reads as empty, and /proc/kmsg (a destructive read) or a process's environment
never is read."""

import os

from cudaswitch.safeio import read_or_none


def test_a_proc_file_is_read_though_its_size_says_zero():
    assert os.stat("/proc/version").st_size == 0
    assert (read_or_none("/proc/version", 4096) or b"").startswith(b"Linux version")


def test_a_link_to_proc_or_the_kernel_log_reads_as_empty(tmp_path):
    link = tmp_path / "version.txt"  # an image's or a project's file pointing into the reader's /proc
    link.symlink_to("/proc/version")
    assert read_or_none(str(link), 4096) == b""
    assert read_or_none("/proc/kmsg", 4096) in (None, b"")
    # nor a process's environment named outright: only the files the driver checks name are read
    assert read_or_none("/proc/%d/environ" % os.getpid(), 4096) == b""
