"""Judge cudaswitch's verdicts in a results directory of check.sh against what the machine itself
says (facts.py). Each expectation passes, fails (a verdict is wrong for this machine), or cannot
be checked (a fact is missing: said so, never counted as a pass). Writes verdicts.json.

Exit: 0 all pass, 1 any fail, 3 none fail but some could not be checked.
"""

import glob
import json
import os
import sys


def load(results, name):
    try:
        with open(os.path.join(results, name), encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def major(version):
    try:
        return int(str(version).split(".")[0])
    except ValueError:
        return None


def checks_by_id(report):
    return {c["id"]: c for c in (report or {}).get("checks", [])}


class Verdicts:
    def __init__(self):
        self.rows = []

    def add(self, name, ok, expected, seen):
        """ok: True pass, False fail, None cannot check."""
        status = {True: "pass", False: "FAIL", None: "cannot check"}[ok]
        self.rows.append({"expectation": name, "status": status, "expected": expected, "seen": seen})


def driver_sources(v, drivers):
    releases = {name: drivers.get(name, {}).get("release") for name in ("proc", "nvml", "nvidia_smi")}
    cudas = {name: drivers.get(name, {}).get("cuda") for name in ("libcuda", "nvml", "nvidia_smi")}
    for label, values in (("release", releases), ("CUDA version", cudas)):
        known = {k: x for k, x in values.items() if x}
        ok = (len(set(known.values())) == 1) if len(known) >= 2 else None
        v.add("every driver source gives the same %s" % label, ok, "one value from %s" % ", ".join(values), values)
    return (next(iter(x for x in releases.values() if x), None),
            drivers.get("libcuda", {}).get("cuda") or cudas.get("nvml"))


def cudaswitch_driver(v, doctor, release, cuda, drivers):
    drv = (doctor or {}).get("driver") or {}
    v.add("cudaswitch reads the driver release", None if not release else drv.get("release") == release,
          release, drv.get("release"))
    v.add("cudaswitch reads the driver's CUDA version", None if not cuda else drv.get("cuda") == cuda,
          cuda, drv.get("cuda"))
    truth = sorted((g["name"], g["capability"]) for g in drivers.get("libcuda", {}).get("gpus", []))
    seen = sorted((g.get("name"), g.get("capability")) for g in drv.get("gpus", []))
    v.add("cudaswitch lists every GPU with its capability", None if not truth else truth == seen, truth, seen)
    hardware = checks_by_id(doctor).get("hardware.gpus", {})
    v.add("doctor's hardware check is ok with a GPU present", None if not truth else hardware.get("level") == "ok",
          "ok", hardware.get("level"))
    module = checks_by_id(doctor).get("driver.kernel_module", {})
    v.add("doctor sees the loaded kernel driver while GPUs answer", None if not truth else module.get("level") == "ok",
          "ok", [module.get("level"), module.get("message")])


def no_self_contradiction(v, reports):
    """A check that calls its own prediction wrong (libs.provenance against /proc/self/maps) is a bug."""
    bugs = [c["message"] for r in reports for c in r.get("checks", []) if "a cudaswitch bug" in c.get("message", "")]
    v.add("no check reports a cudaswitch bug", not bugs, [], bugs)


def toolkit_verdicts(v, report, cuda_driver, has_gpu):
    tk = report.get("toolkit") or {}
    label = "CUDA %s at %s" % (tk.get("version"), tk.get("root"))
    by_id = checks_by_id(report)
    supports = by_id.get("driver.supports_toolkit", {})
    tk_major, drv_major = major(tk.get("version") or ""), major(cuda_driver or "")
    if tk.get("status") == "broken":
        v.add("%s: broken toolkit reported broken" % label, by_id.get("toolkit.status", {}).get("level") == "error",
              "error", by_id.get("toolkit.status", {}).get("level"))
        return
    if tk_major is None or drv_major is None:
        v.add("%s: driver verdict" % label, None, "a toolkit and a driver version", [tk.get("version"), cuda_driver])
    else:
        supported = tk_major <= drv_major  # same major: minor-version compatibility
        ok = (supports.get("level") != "error") if supported else (supports.get("level") == "error")
        v.add("%s: driver CUDA %s %s it" % (label, cuda_driver, "supports" if supported else "does not support"),
              ok, "not error" if supported else "error", supports.get("level"))
    if not tk.get("nvcc"):
        return
    compiled = by_id.get("nvcc.compile", {})
    facts = compiled.get("facts", {})
    ran_right = facts.get("ran") is True and facts.get("run_ok") is True and facts.get("run_output") == "no error 1"
    if not has_gpu:
        v.add("%s: the kernel ran and returned 1" % label, None, "a GPU to run it on", facts)
    elif tk_major is not None and drv_major is not None and tk_major > drv_major:
        v.add("%s: the kernel fails to run (driver too old)" % label, facts.get("run_ok") is False,
              "run_ok false", facts)
    else:
        v.add("%s: the kernel ran and returned 1" % label, ran_right and compiled.get("level") == "ok",
              "level ok, ran, output 'no error 1'", {"level": compiled.get("level"), **facts})


def torch_verdicts(v, torch_facts, reports):
    if not torch_facts or "error" in torch_facts or not torch_facts.get("available"):
        v.add("python3's torch is a CUDA build that sees the GPU", False, "torch.cuda.is_available()", torch_facts)
        return
    sm, arch_list = torch_facts["sm"], torch_facts.get("arch_list", [])
    v.add("the GPU's arch %s is in torch's arch list" % sm, sm in arch_list, sm, arch_list)
    v.add("torch's own matmul on the GPU is right", torch_facts.get("matmul_ok") is True,
          True, torch_facts.get("matmul_ok"))
    for report in reports:
        by_id = checks_by_id(report)
        where = (report.get("toolkit") or {}).get("root")
        arch = by_id.get("torch.gpu_arch", {}).get("level")
        v.add("verify %s: torch.gpu_arch ok (%s in the list)" % (where, sm), None if arch is None else
              (arch == "ok") == (sm in arch_list), "ok" if sm in arch_list else "error", arch)
        matmul = by_id.get("torch.matmul", {}).get("level")
        v.add("verify %s: torch.matmul ok" % where, None if matmul is None else matmul == "ok", "ok", matmul)


def explain_verdicts(v, results):
    for name, words in (("explain-no-kernel-image.json", "no kernel image"),
                        ("explain-driver-insufficient.json", "driver version is insufficient")):
        result = load(results, name)
        v.add("explain knows %r" % words, None if result is None else bool(result.get("matches")),
              "at least one match", None if result is None else len(result.get("matches", [])))


def main(results):
    v = Verdicts()
    drivers = load(results, "drivers.json") or {}
    doctor = load(results, "doctor.json")
    release, cuda = driver_sources(v, drivers)
    cudaswitch_driver(v, doctor, release, cuda, drivers)
    reports = [r for r in (load(results, os.path.basename(p))
                           for p in sorted(glob.glob(os.path.join(results, "verify-*.json")))) if r]
    if not reports:
        v.add("at least one toolkit verified with --compile", None, ">= 1 toolkit", 0)
    for report in reports:
        toolkit_verdicts(v, report, cuda, bool(drivers.get("libcuda", {}).get("gpus")))
    torch_verdicts(v, load(results, "torch-facts.json"), reports)
    no_self_contradiction(v, reports + [doctor or {}])
    explain_verdicts(v, results)
    with open(os.path.join(results, "verdicts.json"), "w", encoding="utf-8") as handle:
        json.dump(v.rows, handle, indent=2)
    for row in v.rows:
        print("%-12s %s (expected %s, seen %s)" % (row["status"], row["expectation"], row["expected"],
                                                   json.dumps(row["seen"])[:160]))
    statuses = {row["status"] for row in v.rows}
    return 1 if "FAIL" in statuses else 3 if "cannot check" in statuses else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
