"""The check registry: each check function registered once with the ids it returns, its layer and the
commands that show it; each command's set is read from here, and explain's rules name these ids. A
leaf module (it imports nothing of the project), so check modules import it without a circle and
`use`'s fast path pays nothing for it."""

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any, Callable, TypedDict, TypeVar
    from typing_extensions import NotRequired

    Function = TypeVar("Function", bound=Callable)

    class CheckResult(TypedDict):
        id: str
        level: str
        message: str
        hint: str | None
        facts: dict[str, Any]
        layer: NotRequired[str]

# (key in the JSON `layer` field, words) bottom up: doctor shows its checks in this order.
LAYERS = (("hardware", "hardware"), ("driver", "driver"), ("toolkit", "toolkit"), ("compiler", "host compiler"),
          ("framework", "framework"), ("deps", "dependencies"), ("env", "environment"))
LAYER_KEYS = tuple(key for key, _ in LAYERS)
# use: its one-line verdict; image: `audit --image`; torch: `cudaswitch torch`'s build plan.
COMMANDS = ("use", "verify", "doctor", "explain", "audit", "image", "torch")


class Ask:
    """What the command asks of a check: `text`, explain's error message (for the archs, libraries or
    versions it names); `unchecked`: say why a check cannot be made where other commands show nothing."""

    __slots__ = ("command", "text", "unchecked")

    def __init__(self, command: str, text: str = "") -> None:
        self.command, self.text, self.unchecked = command, text, command == "explain"


class Entry:
    __slots__ = ("ids", "layer", "commands", "function")

    def __init__(self, ids: tuple, layer: str, commands: tuple, function: "Callable") -> None:
        self.ids, self.layer, self.commands, self.function = ids, layer, commands, function

    @property
    def name(self) -> str:
        return "%s:%s" % (self.function.__module__, self.function.__name__)


ENTRIES: list = []  # in registration order: a command shows its checks in this order
BY_ID: dict = {}


def registered(*ids: str, layer: str, shown_by: tuple) -> "Callable[[Function], Function]":
    """Decorator: the function returns checks with these ids only, in `layer`, shown by `shown_by`. A
    duplicate id, an unknown layer or command is a programming error and stops the import."""
    if layer not in LAYER_KEYS:
        raise ValueError("check layer %r is not one of %s" % (layer, ", ".join(LAYER_KEYS)))
    unknown = [c for c in shown_by if c not in COMMANDS]
    if unknown or not shown_by or not ids:
        raise ValueError("checks %s: commands %r (known: %s)" % (ids, shown_by, ", ".join(COMMANDS)))

    def register(function: "Function") -> "Function":
        entry = Entry(tuple(ids), layer, tuple(shown_by), function)
        for check_id in ids:
            if check_id in BY_ID:
                raise ValueError("check id %s is registered by %s and %s" % (check_id, BY_ID[check_id].name,
                                                                          entry.name))
            BY_ID[check_id] = entry
        ENTRIES.append(entry)
        return function

    return register


def entries_for(command: str) -> list:
    return [entry for entry in ENTRIES if command in entry.commands]


def ids_for(command: str) -> set:
    return {check_id for entry in entries_for(command) for check_id in entry.ids}
