"""Every JSON output against the schema shipped in the package (cudaswitch/data/schemas), on the
standard host (system, module, conda and pip toolkits) and with a GPU-reporting libcuda
stand-in (so the driver's GPU list is filled in as a real driver fills it)."""

import json
import subprocess
from importlib.resources import files

import jsonschema  # the test extra has it
import pytest

from tests import verify_support
from tests.conftest import CUDASWITCH

SCHEMA = json.loads(files("cudaswitch.data").joinpath("schemas/output.schema.json").read_text())


def validate(data, shape):
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    validator = jsonschema.Draft202012Validator({**SCHEMA, "$ref": "#/$defs/%s" % shape})
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join("%s: %s" % ("/".join(map(str, e.absolute_path)), e.message) for e in errors[:10])


def run_json(host, *args, env=None, codes=(0,)):
    proc = host.run(*args, env=env, timeout=300)
    assert proc.returncode in codes, proc.stderr
    return json.loads(proc.stdout)


def test_list_and_use(standard_host):
    items = run_json(standard_host, "list", "--json")
    assert len({item["root"] for item in items}) >= 5
    validate(items, "list")
    validate(run_json(standard_host, "use", "13.1", "--shell", "json"), "use")
    validate(run_json(standard_host, "use", "conda:13", "--shell", "json"), "use")
    validate(run_json(standard_host, "current", "--json"), "current")
    switch = run_json(standard_host, "use", "13.1", "--shell", "json")
    switched = {k: v for k, v in {**standard_host.env, **switch["set"]}.items() if k not in switch["unset"]}
    current = json.loads(subprocess.run([CUDASWITCH, "current", "--json"], env=switched, capture_output=True,
                                        text=True, timeout=120, check=True).stdout)
    assert current["reason"] == "shell"
    validate(current, "current")


def test_current_in_a_project(standard_host, tmp_path):
    (tmp_path / ".cudaversion").write_text("13.1\n")
    current = json.loads(standard_host.run("current", "--json", cwd=str(tmp_path), check=True).stdout)
    # Without the hook the shell still uses what it had; the project file is named as not applied.
    assert current["reason"] != "project"
    assert [(p["kind"], p["file"]) for p in current["pending"]] == [("project", str(tmp_path / ".cudaversion"))]
    validate(current, "current")


@pytest.fixture(scope="module")
def gpu_env(tmp_path_factory):
    lib = verify_support.build_libcuda(tmp_path_factory.mktemp("driver"), 13010, init_rc=0, gpus=["sm_90"])
    return {"CUDASWITCH_LIBCUDA": str(lib)}


@pytest.mark.parametrize("with_gpu", [False, True], ids=["no-driver", "gpu-stand-in"])
def test_verify_and_doctor(standard_host, gpu_env, with_gpu):
    env = gpu_env if with_gpu else None
    for request in ("13.1", "12.4", "conda:13"):
        report = run_json(standard_host, "verify", request, "--json", env=env, codes=(0, 1))
        validate(report, "verify")
    doctor = run_json(standard_host, "doctor", "--json", env=env, codes=(0, 1))
    validate(doctor, "doctor")
    if with_gpu:
        assert doctor["driver"]["gpus"] and doctor["driver"]["cuda"] == "13.1"


def test_audit(standard_host, gpu_env):
    report = run_json(standard_host, "audit", "--json", env=gpu_env)
    validate(report, "audit")
    validate(run_json(standard_host, "audit", "--json", "--root", str(standard_host.root)), "audit")


def test_components_have_one_shape_in_list_and_audit(standard_host):
    """Same keys, same kind of value, under the same name: audit may know more, never other keys."""
    listed = {i["root"]: i for i in run_json(standard_host, "list", "--json")}
    audited = {t["root"]: t for t in run_json(standard_host, "audit", "--json")["toolkits"]}
    assert listed.keys() == audited.keys()
    for root, item in listed.items():
        assert item["components"].keys() == audited[root]["components"].keys()
        assert item["version_json"] == audited[root]["version_json"]
        for name, version in item["components"].items():
            assert version is None or version == audited[root]["components"][name], (root, name)


def test_the_schema_refuses_the_old_list_shape(standard_host):
    """The schema is strict where it matters: version.json's raw keys under `components` fail."""
    item = next(i for i in run_json(standard_host, "list", "--json") if i["version_json"])
    broken = dict(item, components=item["version_json"])
    with pytest.raises(AssertionError):
        validate([broken], "list")
