"""Core operations of the registry commands, kept under their old names while callers move to
cudaswitch/switch/registry.py (the Registry object: active, default, resolve, current)."""

from cudaswitch.switch import registry as _registry


def active_root(env, registry=None):
    """The root of the toolkit this shell uses, as Registry.active answers it."""
    from cudaswitch.registry import discover
    from cudaswitch.paths import Paths

    data = registry if registry is not None else discover.load(Paths(), dict(env))
    record = _registry.Registry(data, env).active()
    return record["root"] if record else None


def in_use(env, registry):
    return _registry.Registry(registry, env).is_active


def list_items(registry, env, runs=None, picks=None):
    return _registry.list_items(_registry.Registry(registry, env), runs, picks)


def list_json_text(registry, env, runs=None, picks=None):
    return _registry.list_json_text(_registry.Registry(registry, env), runs, picks)


def current_record(registry, env):
    return _registry.Registry(registry, env).current()


def which(registry, env, request=None, tool=None):
    return _registry.which(_registry.Registry(registry, env), request, tool)


def set_global(paths, registry, request):
    return _registry.set_global(paths, _registry.Registry(registry, {}), request)
