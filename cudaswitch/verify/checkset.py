"""The checks a command runs, read from the check registry. Importing this module imports every verify/
module that registers checks, so the registry is whole; those modules never import it (a circle)."""

from cudaswitch.verify import checkregistry
# Importing a module registers its checks: those of modules outside MODULE_ORDER show in this order.
from cudaswitch.verify import hostchecks, driverlayer, pipeline, checks, messagechecks  # noqa: F401
from cudaswitch.verify import target, torchplan, pythonlayer, libprovenance, wslhost, nccl  # noqa: F401
from cudaswitch.verify.checkregistry import Ask

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from cudaswitch.verify.host import Host
    from cudaswitch.verify.checkregistry import CheckResult

# Modules in the order their checks are shown (within a layer, for doctor): modules, not checks.
MODULE_ORDER = tuple(m.__name__ for m in (hostchecks, driverlayer, pipeline, checks, messagechecks))


def _position(entry: checkregistry.Entry) -> "tuple[int, int]":
    module = entry.function.__module__
    rank = MODULE_ORDER.index(module) if module in MODULE_ORDER else len(MODULE_ORDER)
    return rank, checkregistry.ENTRIES.index(entry)


def entries(command: str) -> list:
    """The registered checks `command` shows, in the order it shows them."""
    found = sorted(checkregistry.entries_for(command), key=_position)
    if command == "doctor":
        found.sort(key=lambda entry: checkregistry.LAYER_KEYS.index(entry.layer))  # stable: module order within
    return found


def run(host: "Host", command: str, text: str = "") -> "list[CheckResult]":
    """The checks of `command` on `host`; doctor's carry their `layer`."""
    ask = Ask(command, text)
    out: "list[CheckResult]" = []
    for entry in entries(command):
        items: "list[CheckResult]" = entry.function(host, ask)
        out += [{**item, "layer": entry.layer} for item in items] if command == "doctor" else items
    return out


def run_ids(host: "Host", ids: list, text: str = "") -> "list[CheckResult]":
    """The checks with these ids (explain's rule), each owning function run once, in the rule's order."""
    wanted, owners = set(ids), dict.fromkeys(checkregistry.BY_ID[check_id] for check_id in ids)
    ask = Ask("explain", text)
    return [item for owner in owners for item in owner.function(host, ask) if item["id"] in wanted]
