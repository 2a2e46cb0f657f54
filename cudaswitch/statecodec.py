"""CUDASWITCH_STATE read as data: the marshal form switch_env() writes, decoded by our own bounded
reader, never by marshal.loads. Anyone who can set a variable chooses its bytes, and marshal.loads
trusts the sizes it reads (a few KB of `(` ask for gigabytes). This reader knows only a state's
types, takes no count larger than the bytes left, no nesting deeper than a state has, and stops
once the decoded text (shared references counted at each use) passes a budget."""

import binascii

MAX_CHARS = 256 << 10  # the variable itself; Linux caps one environment string at 128 KiB anyway
MAX_DEPTH = 6  # a state nests 4 deep (state > modules > outer > value)
MAX_COST = 4 * MAX_CHARS  # decoded items and characters, a shared string counted at each use

FLAG_REF = 0x80
ONE_BYTE_LEN = {ord("z"), ord("Z")}  # short ASCII strings (plain, interned)
FOUR_BYTE_LEN = {ord("a"), ord("A"), ord("u"), ord("t")}  # ASCII, interned ASCII, UTF-8, interned


class NotAState(ValueError):
    """The bytes are not a state this program wrote."""


def encode(state: dict) -> str:
    import marshal

    return binascii.b2a_base64(marshal.dumps(state), newline=False).decode("ascii")


def decode(raw: object) -> object:
    """The object CUDASWITCH_STATE holds, or raise NotAState (too big, not base64, foreign types)."""
    if not isinstance(raw, str) or len(raw) > MAX_CHARS:
        raise NotAState("too long")
    try:
        text = raw.encode("ascii")
        data = binascii.a2b_base64(text)
    except (UnicodeError, binascii.Error, ValueError):
        raise NotAState("not base64") from None
    if binascii.b2a_base64(data, newline=False) != text:  # exactly what encode() writes (3.10: no strict_mode)
        raise NotAState("not base64")
    reader = _Reader(data)
    value = reader.read(0)
    if reader.pos != len(data):
        raise NotAState("trailing bytes")
    return value


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos, self.cost = data, 0, 0
        # (object, cost); None while the container it names is still being read
        self.refs: "list[tuple[object, int] | None]" = []

    def take(self, count: int) -> bytes:
        if count < 0 or self.pos + count > len(self.data):
            raise NotAState("truncated")
        chunk = self.data[self.pos:self.pos + count]
        self.pos += count
        return chunk

    def count(self, width: int) -> int:
        value = int.from_bytes(self.take(width), "little", signed=width == 4)
        if value < 0 or value > len(self.data) - self.pos:  # every item needs at least one byte
            raise NotAState("bad length")
        return value

    def spend(self, cost: int) -> None:
        self.cost += cost
        if self.cost > MAX_COST:
            raise NotAState("too big")

    def read(self, depth: int) -> object:
        code = self.take(1)[0]
        flagged, code = code & FLAG_REF, code & ~FLAG_REF
        if code == ord("r"):
            return self.reference()
        slot = None
        if flagged:
            slot = len(self.refs)
            self.refs.append(None)
        start = self.cost
        value = self.value(code, depth)
        if slot is not None:
            self.refs[slot] = (value, self.cost - start)
        return value

    def reference(self) -> object:
        index = int.from_bytes(self.take(4), "little")
        entry = self.refs[index] if index < len(self.refs) else None
        if entry is None:
            raise NotAState("bad reference")
        value, cost = entry
        self.spend(cost)
        return value

    def value(self, code: int, depth: int) -> object:
        self.spend(1)
        if code == ord("N"):
            return None
        if code == ord("i"):
            return int.from_bytes(self.take(4), "little", signed=True)
        if code in ONE_BYTE_LEN or code in FOUR_BYTE_LEN:
            return self.text(code)
        if depth >= MAX_DEPTH:
            raise NotAState("too deep")
        if code in (ord("("), ord(")"), ord("[")):
            size = self.count(1 if code == ord(")") else 4)
            items = [self.read(depth + 1) for _ in range(size)]
            return items if code == ord("[") else tuple(items)
        if code == ord("{"):
            return self.mapping(depth)
        raise NotAState("type %r" % chr(code))

    def text(self, code: int) -> str:
        raw = self.take(self.count(1 if code in ONE_BYTE_LEN else 4))
        self.spend(len(raw))
        try:  # marshal writes lone surrogates (an environment's undecodable bytes) with surrogatepass
            return raw.decode("utf-8" if code in (ord("u"), ord("t")) else "ascii", "surrogatepass")
        except UnicodeError:
            raise NotAState("bad text") from None

    def mapping(self, depth: int) -> "dict[str, object]":
        out: "dict[str, object]" = {}
        while True:
            if self.data[self.pos:self.pos + 1] == b"0":  # the end of a dict
                self.pos += 1
                return out
            key = self.read(depth + 1)
            if not isinstance(key, str):
                raise NotAState("a key that is not text")
            out[key] = self.read(depth + 1)


def is_name(text: object) -> bool:
    """A variable name every reader takes as one: [A-Za-z_][A-Za-z0-9_]* (no `re` import here)."""
    return isinstance(text, str) and text.isascii() and text.isidentifier()
