"""A tiny protobuf wire-format reader, independent of our generated classes.

The template Node bytes are checked with this instead of k8s_core_pb2, so a wrong field number in
our .proto cannot hide behind the same wrong number on the decoding side: the expectations in the
tests are the numbers of Kubernetes' own core/v1 encoding.
"""
from __future__ import annotations


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def fields(data: bytes) -> dict[int, list[tuple[int, object]]]:
    """{field number: [(wire type, value), ...]}: varints as int, length-delimited as bytes."""
    out: dict[int, list[tuple[int, object]]] = {}
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value, pos = _varint(data, pos)
        elif wire_type == 2:
            length, pos = _varint(data, pos)
            value = data[pos:pos + length]
            if len(value) != length:
                raise ValueError(f"field {number}: truncated length-delimited value")
            pos += length
        elif wire_type == 1:
            value, pos = data[pos:pos + 8], pos + 8
        elif wire_type == 5:
            value, pos = data[pos:pos + 4], pos + 4
        else:
            raise ValueError(f"field {number}: unsupported wire type {wire_type}")
        out.setdefault(number, []).append((wire_type, value))
    return out


def one(data: bytes, number: int) -> bytes | int:
    """The single value of a field (its last occurrence, as protobuf merges)."""
    return fields(data)[number][-1][1]


def text(data: bytes, number: int) -> str:
    return one(data, number).decode()


def string_map(data: bytes, number: int) -> dict[str, bytes]:
    """A map field: repeated entries {key = 1, value = 2}; values returned raw."""
    out = {}
    for wire_type, entry in fields(data).get(number, []):
        assert wire_type == 2, f"map field {number} must be length-delimited"
        parsed = fields(entry)
        out[parsed[1][0][1].decode()] = parsed.get(2, [(2, b"")])[0][1]
    return out
