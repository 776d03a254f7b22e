"""The OCR recogniser's model with its hard-swish activations fused, so one known region reads in less time.

PP-OCRv4's recogniser (the model rapidocr-onnxruntime ships) was exported from Paddle with every hard-swish written
out as four operators: ``Div(Mul(x, Clip(Add(x, 3), 0, 6)), 6)``, 28 times. onnxruntime fuses none of them, so each
pass over the activations is a separate loop. ``Mul(x, HardSigmoid(x, alpha=1/6, beta=1/2))`` is the same function
in two operators (the outputs differ by float rounding, at most 2e-6 on the model's logits); measured on these
machines, one recognition goes from 11.8 to 10.8 ms (p50, one thread), `benchmarks/test_bench_verify.py`.

The rewrite works on the protobuf wire format with the field numbers of ONNX's own schema (onnx/onnx.proto:
ModelProto.graph = 7; GraphProto.node = 1, initializer = 5; NodeProto input = 1, output = 2, name = 3, op_type = 4,
attribute = 5; AttributeProto name = 1, f = 2, t = 5, type = 20; TensorProto dims = 1, data_type = 2,
float_data = 4, name = 8, raw_data = 9), so the onnx package is not needed. Everything but the node list is copied
byte for byte. A model without the pattern comes back unchanged; the rewritten model is written once under the
engine's home folder and reused.
"""

from __future__ import annotations

import hashlib
import logging
import os
import struct
import tempfile
from pathlib import Path

log = logging.getLogger(__name__)

REWRITE_VERSION = 1
"""Part of the cached file's name: a change to the rewrite makes a new file."""

_VARINT, _FIXED64, _BYTES, _FIXED32 = 0, 1, 2, 5
_FLOAT_TENSOR, _FLOAT_ATTRIBUTE = 1, 1


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def _fields(buf: bytes) -> list[tuple[int, int, int | bytes, bytes]]:
    """Every field of a message: (number, wire type, value, the field's own bytes, tag included)."""
    fields, pos = [], 0
    while pos < len(buf):
        start = pos
        tag, pos = _varint(buf, pos)
        number, wire = tag >> 3, tag & 7
        if wire == _VARINT:
            value, pos = _varint(buf, pos)
        elif wire == _BYTES:
            size, pos = _varint(buf, pos)
            value, pos = buf[pos:pos + size], pos + size
        elif wire in (_FIXED64, _FIXED32):
            size = 8 if wire == _FIXED64 else 4
            value, pos = buf[pos:pos + size], pos + size
        else:
            raise ValueError(f"protobuf wire type {wire} at byte {start}")
        fields.append((number, wire, value, buf[start:pos]))
    return fields


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _field(number: int, value: bytes | str) -> bytes:
    data = value.encode() if isinstance(value, str) else value
    return _encode_varint(number << 3 | _BYTES) + _encode_varint(len(data)) + data


def _node(op_type: str, inputs: list[str], output: str, name: str, floats: dict[str, float] | None = None) -> bytes:
    body = b"".join(_field(1, i) for i in inputs) + _field(2, output) + _field(3, name) + _field(4, op_type)
    for key, value in (floats or {}).items():
        attribute = (_field(1, key) + _encode_varint(2 << 3 | _FIXED32) + struct.pack("<f", value)
                     + _encode_varint(20 << 3 | _VARINT) + _encode_varint(_FLOAT_ATTRIBUTE))
        body += _field(5, attribute)
    return _field(1, body)


def _scalar(tensor: bytes) -> tuple[str, float] | None:
    """(name, value) of a float tensor holding one number, else None."""
    fields = _fields(tensor)
    kinds = {number: value for number, _, value, _ in fields}
    if kinds.get(2) != _FLOAT_TENSOR or any(n == 1 and v != 1 for n, _, v, _ in fields):
        return None
    data = kinds.get(9) or kinds.get(4)
    if not isinstance(data, bytes) or len(data) != 4 or 8 not in kinds:
        return None
    return kinds[8].decode(), struct.unpack("<f", data)[0]


class _Node:
    def __init__(self, raw: bytes, body: bytes):
        self.raw = raw
        fields = _fields(body)
        self.inputs = [v.decode() for n, _, v, _ in fields if n == 1]
        self.outputs = [v.decode() for n, _, v, _ in fields if n == 2]
        self.op = next((v.decode() for n, _, v, _ in fields if n == 4), "")
        self.tensors = [v for n, _, attribute, _ in fields if n == 5
                        for m, _, v, _ in _fields(attribute) if m == 5]


def fuse_hard_swish(model: bytes) -> tuple[bytes, int]:
    """The model with every written-out hard-swish fused, and how many were; (model, 0) when there is none."""
    top = _fields(model)
    graph = next((value for number, wire, value, _ in top if number == 7 and wire == _BYTES), None)
    if graph is None:
        return model, 0
    graph_fields = _fields(graph)
    nodes = [_Node(raw, value) for number, wire, value, raw in graph_fields if number == 1 and wire == _BYTES]
    constants = dict(filter(None, (_scalar(value) for number, wire, value, _ in graph_fields
                                   if number == 5 and wire == _BYTES)))
    for node in nodes:
        if node.op == "Constant" and node.tensors and node.outputs:
            found = _scalar(node.tensors[0] + _field(8, node.outputs[0]))
            if found:
                constants[node.outputs[0]] = found[1]
    producer = {output: node for node in nodes for output in node.outputs}
    consumers: dict[str, list[_Node]] = {}
    for node in nodes:
        for name in node.inputs:
            consumers.setdefault(name, []).append(node)

    def only_consumer(node: _Node, op: str) -> _Node | None:
        users = consumers.get(node.outputs[0], [])
        return users[0] if len(users) == 1 and users[0].op == op else None

    replaced: dict[int, bytes] = {}
    dropped: set[int] = set()
    for clip in (node for node in nodes if node.op == "Clip" and len(node.inputs) == 3):
        add = producer.get(clip.inputs[0])
        if (add is None or add.op != "Add" or len(add.inputs) != 2 or constants.get(add.inputs[1]) != 3.0
                or constants.get(clip.inputs[1]) != 0.0 or constants.get(clip.inputs[2]) != 6.0
                or only_consumer(add, "Clip") is not clip):
            continue
        x = add.inputs[0]
        mul = only_consumer(clip, "Mul")
        div = only_consumer(mul, "Div") if mul else None
        if mul is None or sorted(mul.inputs) != sorted([x, clip.outputs[0]]) or div is None \
                or constants.get(div.inputs[1]) != 6.0:
            continue
        gate = f"{clip.outputs[0]}.hard_sigmoid"
        replaced[id(add)] = (_node("HardSigmoid", [x], gate, f"{gate}.node", {"alpha": 1 / 6, "beta": 0.5})
                             + _node("Mul", [x, gate], div.outputs[0], f"{gate}.mul"))
        dropped.update((id(clip), id(mul), id(div)))
    if not replaced:
        return model, 0
    node_bytes = b"".join(replaced.get(id(node), b"" if id(node) in dropped else node.raw) for node in nodes)
    rest = b"".join(raw for number, wire, _, raw in graph_fields if not (number == 1 and wire == _BYTES))
    new_graph = node_bytes + rest
    out = b"".join(_field(7, new_graph) if number == 7 and wire == _BYTES else raw for number, wire, _, raw in top)
    return out, len(replaced)


def fused_model_path(original: Path, cache_dir: Path) -> Path:
    """The fused copy of `original` in `cache_dir` (written on first use, atomically); `original` itself when it has
    no hard-swish to fuse or the copy cannot be written."""
    data = original.read_bytes()
    digest = hashlib.sha256(data).hexdigest()[:16]
    target = cache_dir / f"{original.stem}.fused-v{REWRITE_VERSION}-{digest}.onnx"
    if target.is_file():
        return target
    try:
        fused, count = fuse_hard_swish(data)
    except (ValueError, IndexError, UnicodeDecodeError, struct.error) as exc:
        log.warning("OCR model %s not rewritten (%s): using it as shipped", original.name, exc)
        return original
    if not count:
        return original
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=cache_dir, suffix=".part")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(fused)
            os.replace(tmp, target)
        finally:
            Path(tmp).unlink(missing_ok=True)
    except OSError as exc:
        log.warning("cannot write the fused OCR model to %s (%s): using it as shipped", cache_dir, exc)
        return original
    log.info("OCR model %s: %d hard-swish activations fused -> %s", original.name, count, target)
    return target
