"""OCR verifier: rapidocr-onnxruntime on a known region (recognition only), detection only for free text.

One engine is shared by the process and loaded on first use (the models take a few hundred MB and a second or
two): loading is guarded by a lock so two threads never load twice, and inference is serialised because the
engine's sessions run single-threaded (intra_op_num_threads=1) so OCR never starves the 2-core hot path.
"""

from __future__ import annotations

import logging
import re
import threading
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.config.schema import Graph, OcrSignature, Page
from engine.core.errors import VerificationError
from engine.core.paths import agent_home
from engine.core.results import Evidence
from verifiers.common import TimedCheck, clip, plain, pyramid, signature_name
from verifiers.ocrmodel import fused_model_path

log = logging.getLogger(__name__)

FALLBACK_BELOW = 0.5
"""Recognition confidence under which a known region is read again with text detection."""

REC_MODEL = "models/ch_PP-OCRv4_rec_infer.onnx"
"""The recogniser rapidocr-onnxruntime 1.4 ships (its config.yaml, Rec.model_path), loaded with its hard-swish
activations fused (verifiers/ocrmodel.py); another version's model is loaded as that version configures it."""

_engine = None
_load_lock = threading.Lock()
_run_lock = threading.Lock()


def engine():
    """The shared RapidOCR engine, loaded on first call."""
    global _engine
    if _engine is None:
        with _load_lock:
            if _engine is None:
                start = time.perf_counter()
                try:
                    from rapidocr_onnxruntime import RapidOCR

                    _engine = RapidOCR(
                        intra_op_num_threads=1,
                        inter_op_num_threads=1,
                        det_limit_type="max",
                        print_verbose=False,
                        **model_options(),
                    )
                except Exception as exc:  # a broken install is a verification failure, not a crash
                    raise VerificationError(f"cannot load the OCR engine: {exc}") from exc
                log.info("OCR engine loaded in %.0f ms", (time.perf_counter() - start) * 1000)
    return _engine


def model_options() -> dict[str, str]:
    """RapidOCR's options that load the fused recogniser (written under the engine's home folder on first use)."""
    import rapidocr_onnxruntime

    shipped = Path(rapidocr_onnxruntime.__file__).parent / REC_MODEL
    if not shipped.is_file():
        return {}
    return {"rec_model_path": str(fused_model_path(shipped, agent_home() / "cache" / "ocr"))}


def loaded() -> bool:
    return _engine is not None


def normalise(text: str) -> str:
    """NFKC (full-width ``７`` is ``7``), runs of whitespace collapsed to one space, casefolded: patterns need not
    care about any of them."""
    return " ".join(unicodedata.normalize("NFKC", text).split()).casefold()


def _region(frame: np.ndarray, area) -> np.ndarray:
    x1, y1, x2, y2 = clip(tuple(area), (frame.shape[1], frame.shape[0]))
    return np.ascontiguousarray(frame[y1:y2, x1:x2])


def read_text(frame: np.ndarray, area, *, fallback_detection: bool = True) -> tuple[str, float]:
    """Recognise the text in `area` of a BGR frame: (text, confidence); ("", 0.0) when there is none.

    Recognition alone is fast and right when the area is tight around one line. When it reads nothing credible
    (an area declared loosely, around an icon and a label), text detection runs on that region only, which is
    still far cheaper than on a whole frame; the lines found are joined left to right, top to bottom.
    """
    region = _region(frame, area)
    if region.size == 0:
        return "", 0.0
    ocr = engine()
    with _run_lock:
        result, _ = ocr(region, use_det=False, use_cls=False, use_rec=True)
    text, score = (result[0][0], float(result[0][1])) if result else ("", 0.0)
    if (not text.strip() or score < FALLBACK_BELOW) and fallback_detection:
        boxes = find_text(region, min_confidence=FALLBACK_BELOW)
        if boxes:
            text = " ".join(b.text for b in boxes)
            score = min(b.confidence for b in boxes)
    return text, score


def read_value(frame: np.ndarray, area, pattern: str) -> tuple[str, str | None, float]:
    """Read `area` and extract a value with `pattern` (its first group, else the whole match; case ignored).

    Returns (the text read, NFKC-normalised so full-width digits are digits; the value or None; confidence).
    """
    text, confidence = read_text(frame, area)
    text = unicodedata.normalize("NFKC", text or "")
    match = re.search(pattern, text, re.IGNORECASE)
    value = (match.group(1) if match.groups() else match.group(0)) if match else None
    return text, value, float(confidence or 0.0)


@dataclass(frozen=True)
class TextBox:
    text: str
    confidence: float
    box: tuple[int, int, int, int]


def find_text(frame: np.ndarray, area=None, min_confidence: float = 0.5) -> list[TextBox]:
    """Detect and recognise every text line (in `area`, default the whole frame): for frames we do not know."""
    x0, y0 = (area[0], area[1]) if area is not None else (0, 0)
    region = _region(frame, area) if area is not None else frame
    ocr = engine()
    with _run_lock:
        result, _ = ocr(region, use_det=True, use_cls=False, use_rec=True, text_score=min_confidence)
    boxes = []
    for points, text, score in result or []:
        xs = [p[0] for p in points]
        ys = [p[1] for p in points]
        box = (int(min(xs)) + x0, int(min(ys)) + y0, int(max(xs)) + x0, int(max(ys)) + y0)
        boxes.append(TextBox(text, float(score), box))
    return boxes


@dataclass(frozen=True, eq=False)
class OcrCheck(TimedCheck):
    """An OCR signature compiled once: area, compiled pattern, threshold."""

    name: str
    area: tuple[int, int, int, int]
    pattern: re.Pattern
    threshold: float
    channel = "ocr"
    cost = 2
    strong = True

    def measure(self, frame: np.ndarray) -> tuple[bool, float, str]:
        # Within one observation (its frame_scope), an area is read once however many pages read it: a game whose
        # pages all put their title in one place made a full scan read the same pixels once per page.
        texts = pyramid(frame).texts
        found = texts.get(self.area)
        if found is None:
            found = texts[self.area] = read_text(frame, self.area)
        text, confidence = found
        hit = confidence >= self.threshold and self.pattern.search(normalise(text)) is not None
        return hit, confidence, text


def compile_ocr(signature: OcrSignature, graph: Graph, page: Page | None = None) -> OcrCheck:
    pattern = plain(signature.pattern, f"pattern of {signature_name(signature)}")
    area = plain(signature.area, f"area of {signature_name(signature)}")
    threshold = signature.threshold if signature.threshold is not None else graph.settings(page).ocr_threshold
    return OcrCheck(
        name=signature_name(signature),
        area=clip(tuple(area), graph.resolution),
        pattern=re.compile(pattern, re.IGNORECASE),
        threshold=float(threshold),
    )


def verify(frame: np.ndarray, signature: OcrSignature | OcrCheck, graph: Graph | None = None,
           page: Page | None = None) -> Evidence:
    check = signature if isinstance(signature, OcrCheck) else compile_ocr(signature, graph, page)
    return check.verify(frame)
