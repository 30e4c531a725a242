"""Decode the protobuf request bodies kubectl's typed clients send (`kubectl create secret|configmap|namespace`).

kubectl 1.32's generators post `application/vnd.kubernetes.protobuf`; everything else it sends is JSON. The
envelope is the magic "k8s\\x00" followed by a runtime.Unknown {typeMeta, raw}; `raw` is the object in the
field numbering of k8s.io/api's generated.proto. Only the kinds below are decoded; others answer 415 so the
gap is loud. Answers are always JSON, which every client accepts (they list application/json in Accept).
"""
from __future__ import annotations

import base64
from typing import Any, Callable

MAGIC = b"k8s\x00"


class ProtobufError(ValueError):
    pass


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if pos >= len(buf):
            raise ProtobufError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def fields(buf: bytes) -> list[tuple[int, Any]]:
    """(field number, value) pairs; length-delimited values stay bytes, varints are ints."""
    out, pos = [], 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        num, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 2:
            n, pos = _varint(buf, pos)
            value, pos = buf[pos:pos + n], pos + n
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise ProtobufError(f"unsupported wire type {wire}")
        out.append((num, value))
    return out


def _str(b: bytes) -> str:
    return b.decode()


def _map(entries: list[bytes], value: Callable[[bytes], Any] = _str) -> dict[str, Any]:
    out = {}
    for entry in entries:
        kv = dict(fields(entry))
        out[_str(kv.get(1, b""))] = value(kv.get(2, b""))
    return out


def _object_meta(buf: bytes) -> dict[str, Any]:
    md: dict[str, Any] = {}
    labels, annotations, finalizers = [], [], []
    for num, v in fields(buf):
        if num in (1, 2, 3):
            md[{1: "name", 2: "generateName", 3: "namespace"}[num]] = _str(v)
        elif num == 11:
            labels.append(v)
        elif num == 12:
            annotations.append(v)
        elif num == 14:
            finalizers.append(_str(v))
    if labels:
        md["labels"] = _map(labels)
    if annotations:
        md["annotations"] = _map(annotations)
    if finalizers:
        md["finalizers"] = finalizers
    return md


def _b64(b: bytes) -> str:
    return base64.b64encode(b).decode()


def _configmap(buf: bytes) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    data, binary = [], []
    for num, v in fields(buf):
        if num == 1:
            obj["metadata"] = _object_meta(v)
        elif num == 2:
            data.append(v)
        elif num == 3:
            binary.append(v)
        elif num == 4:
            obj["immutable"] = bool(v)
    if data:
        obj["data"] = _map(data)
    if binary:
        obj["binaryData"] = _map(binary, _b64)
    return obj


def _secret(buf: bytes) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    data, string_data = [], []
    for num, v in fields(buf):
        if num == 1:
            obj["metadata"] = _object_meta(v)
        elif num == 2:
            data.append(v)
        elif num == 3:
            obj["type"] = _str(v)
        elif num == 4:
            string_data.append(v)
        elif num == 5:
            obj["immutable"] = bool(v)
    if data:
        obj["data"] = _map(data, _b64)
    if string_data:
        obj["stringData"] = _map(string_data)
    return obj


def _metadata_only(buf: bytes) -> dict[str, Any]:
    return {"metadata": _object_meta(v) for num, v in fields(buf) if num == 1}


DECODERS: dict[str, Callable[[bytes], dict[str, Any]]] = {
    "ConfigMap": _configmap, "Secret": _secret, "Namespace": _metadata_only, "ServiceAccount": _metadata_only,
}


def decode(body: bytes) -> dict[str, Any]:
    if not body.startswith(MAGIC):
        raise ProtobufError("missing the k8s protobuf magic prefix")
    envelope = dict(fields(body[len(MAGIC):]))
    type_meta = dict(fields(envelope.get(1, b"")))
    api_version, kind = _str(type_meta.get(1, b"")), _str(type_meta.get(2, b""))
    decoder = DECODERS.get(kind)
    if decoder is None:
        raise ProtobufError(f"the lab decodes protobuf bodies only for {', '.join(sorted(DECODERS))}, not {kind}; "
                            "send JSON")
    obj = decoder(envelope.get(2, b""))
    if kind == "Secret" and "stringData" in obj:  # the real server folds stringData into data on write
        obj.setdefault("data", {}).update({k: _b64(v.encode()) for k, v in obj.pop("stringData").items()})
    return {"apiVersion": api_version, "kind": kind, **obj}
