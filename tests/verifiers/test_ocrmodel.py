"""The recogniser with fused hard-swish activations reads what the shipped model reads (verifiers/ocrmodel.py)."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import onnxruntime as ort
import pytest
import rapidocr_onnxruntime

from verifiers import ocr
from verifiers.ocrmodel import fuse_hard_swish, fused_model_path

SHIPPED = Path(rapidocr_onnxruntime.__file__).parent / ocr.REC_MODEL


def _session(model: bytes) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])


@pytest.fixture(scope="module")
def models() -> tuple[bytes, bytes, int]:
    original = SHIPPED.read_bytes()
    fused, count = fuse_hard_swish(original)
    return original, fused, count


def test_every_hard_swish_is_fused_and_a_second_pass_finds_none(models):
    original, fused, count = models
    assert count > 0 and len(fused) < len(original)
    again, second = fuse_hard_swish(fused)
    assert second == 0 and again == fused


def test_the_fused_model_computes_the_same_logits(models):
    original, fused, _ = models
    before, after = _session(original), _session(fused)
    name = before.get_inputs()[0].name
    batch = np.random.default_rng(7).uniform(-1, 1, (2, 3, 48, 320)).astype(np.float32)
    expected, got = before.run(None, {name: batch})[0], after.run(None, {name: batch})[0]
    assert got.shape == expected.shape
    assert np.abs(got - expected).max() < 1e-4
    assert (got.argmax(-1) == expected.argmax(-1)).all()


def test_real_screenshots_read_the_same_text_with_either_model(shared_dir, models):
    """Every text line found on three real screenshots is recognised by both models: same text, confidence within
    0.001."""
    from rapidocr_onnxruntime import RapidOCR

    shipped = RapidOCR(intra_op_num_threads=1, inter_op_num_threads=1, print_verbose=False)
    frames = json.loads((shared_dir / "screens" / "labels.json").read_text())["frames"][:3]
    crops = 0
    for item in frames:
        frame = cv2.imread(str(shared_dir / "screens" / item["file"]))
        for box in ocr.find_text(frame, min_confidence=0.3)[:12]:
            x1, y1, x2, y2 = box.box
            crop = np.ascontiguousarray(frame[y1:y2 + 1, x1:x2 + 1])
            ours = ocr.engine()(crop, use_det=False, use_cls=False, use_rec=True)[0]
            theirs = shipped(crop, use_det=False, use_cls=False, use_rec=True)[0]
            assert ours[0][0] == theirs[0][0], (item["file"], box)
            assert abs(float(ours[0][1]) - float(theirs[0][1])) < 1e-3
            crops += 1
    assert crops >= 10


def test_the_engine_loads_the_fused_copy_from_the_home_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("ENGINE_HOME", str(tmp_path))
    path = Path(ocr.model_options()["rec_model_path"])
    assert path.parent == tmp_path / "cache" / "ocr" and ".fused-v" in path.name and path.is_file()


def test_a_model_it_cannot_parse_or_write_is_used_as_shipped(tmp_path, caplog):
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"\x0f\xff\xff")  # wire type 7 does not exist
    assert fused_model_path(broken, tmp_path / "cache") == broken
    no_graph = tmp_path / "empty.onnx"
    no_graph.write_bytes(b"\x08\x07")  # ir_version = 7 and nothing else
    assert fused_model_path(no_graph, tmp_path / "cache") == no_graph
    readonly = tmp_path / "file-not-dir"
    readonly.write_text("x")
    assert fused_model_path(SHIPPED, readonly / "cache") == SHIPPED
    assert "using it as shipped" in caplog.text


def test_the_fused_copy_is_written_once_and_reused(tmp_path):
    first = fused_model_path(SHIPPED, tmp_path)
    stamp = first.stat().st_mtime_ns
    assert fused_model_path(SHIPPED, tmp_path) == first and first.stat().st_mtime_ns == stamp
    assert [p.name for p in tmp_path.iterdir()] == [first.name]  # no .part left behind
