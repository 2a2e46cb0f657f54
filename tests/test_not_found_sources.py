"""A SOURCE:REQUEST that matches nothing answers about that source only: the versions it lists
and the nearest one it suggests come from that source (the standard host: pip has 13.0 in
/opt/venv, the module system has 13.1, nothing is managed)."""


def refused(host, request):
    proc = host.run("use", request, "--shell", "bash")
    assert proc.returncode != 0 and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) <= 2 and "Traceback" not in proc.stderr
    return proc.stderr


def test_pip_lists_only_pip_toolkits(standard_host):
    pip = {i["version"] for i in standard_host.list_json().values() if "pip" in i["sources"]}
    others = {i["version"] for i in standard_host.list_json().values()} - pip
    assert pip and others
    text = refused(standard_host, "pip:12")
    assert "found in pip: %s" % ", ".join(sorted(pip)) in text
    assert not any(v in text for v in others), text
    assert "nearest: pip:13.0" in text


def test_module_lists_only_modules(standard_host):
    text = refused(standard_host, "module:12.4")
    assert "found in module: 13.1." in text and "12.4.1" not in text.split("found in module:")[1].split(")")[0]
    assert "nearest: module:13.1" in text


def test_a_source_with_no_toolkits_says_so(standard_host):
    text = refused(standard_host, "managed:13")
    assert "managed has no toolkits here" in text
    assert "13.1." not in text and "12.4" not in text
