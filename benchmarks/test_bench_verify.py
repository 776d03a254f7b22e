"""Verification latency and memory on 2 cores (see docs/benchmarks/verify.md for the table and how to run).

Asserted, each against a baseline timed in alternation with ours in the same run (so a busy machine slows both
alike): verifying the expected page at most 0.75 of the naive way (the whole frame converted to gray, then the same
checks); classifying among every Azur Lane page and popup at most 0.75 of a naive ALAS-style classifier; OCR of one
known region at most 0.85 of RapidOCR's full pipeline on the same crop and not slower than its recognition alone
(1.15x room; the fused model's 0.93 is reported with its interval, not asserted: issue 49); the vision
client at most a few times the bare HTTP round trip to the same local endpoint. Peak RSS of observing <= 200 MB
without OCR and <= 600 MB with it. Absolute times (targets: verify p50 ~0.2 ms, classify ~10 ms, OCR ~12 ms on the
machine of the README's tables) are printed and written to the run's figures file, never asserted: machines here
differ two-fold.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import cv2
import numpy as np
import pytest

from engine.config.loader import load_graph
from engine.config.schema import TemplateSignature
from engine.observe.observer import Observer
from engine.sim import SimGame, SyntheticAssets

pytestmark = pytest.mark.timing  # a speed assertion: runs alone (the README's last pytest)

ROOT = Path(__file__).resolve().parents[1]
RESULTS: dict[str, float] = {}
CLASSIFY_OVER_NAIVE = 0.75
"""Classifying among every page and popup against the naive ALAS-style classifier: a gain of at least a quarter."""
NOT_SLOWER = 1.15
"""A ratio bound for "not slower than": wider than the largest run-to-run ratio seen for the fused OCR (1.04)."""
SIM_PAGES = ["page_main", "page_commission", "page_dock", "page_shop", "page_reward", "page_guild",
             "page_campaign_menu", "page_research", "page_build", "page_meowfficer", "page_mail", "page_academy"]


def _median_ms(benchmark) -> float | None:
    stats = getattr(benchmark, "stats", None)
    if not stats:
        return None
    return stats.stats.median * 1000.0


@pytest.fixture(scope="module")
def sim():
    graph = load_graph(server="en")
    assets = SyntheticAssets(graph)
    game = SimGame(graph, assets=assets)
    frames = []
    for page in SIM_PAGES:
        game.goto(page)
        frames.append((page, game.frame()))
    noise = np.random.default_rng(0).integers(0, 256, (720, 1280, 3), dtype=np.uint8)
    frames.append((None, noise))  # an unknown frame: every page and popup is scanned
    return graph, assets, Observer(graph, assets), frames


def _cycle(frames):
    state = {"i": 0}

    def next_frame():
        state["i"] = (state["i"] + 1) % len(frames)
        return frames[state["i"]]

    return next_frame


def _paired_samples(ours, naive, rounds: int, block: int = 1) -> tuple[list[float], list[float]]:
    """Times in ms of `ours` and `naive`, called in alternation (after one warm-up call each), `block` calls of one
    before `block` calls of the other: a block of a whole frame cycle keeps each way's caches as warm as they are in
    steady use, so that the ratio measures the work and not which way evicted the other's data."""
    ours(), naive()
    samples: tuple[list[float], list[float]] = ([], [])
    for _ in range(rounds):
        for way, kept in ((ours, samples[0]), (naive, samples[1])):
            for _ in range(block):
                start = time.perf_counter()
                way()
                kept.append(1000 * (time.perf_counter() - start))
    return samples


def test_bench_verify_expected_page(benchmark, sim, figures):
    """Only the areas the page's checks look at are converted to gray; the naive way converts the whole frame
    first (what every verification paid before), then runs the same checks."""
    from verifiers.common import frame_scope

    _, _, observer, frames = sim
    page, frame = frames[1]
    hit, _ = benchmark.pedantic(observer.verify_page, args=(frame, page), rounds=300, warmup_rounds=10)
    assert hit
    target = observer.page_by_name[page]

    def naive():
        prepared = observer.prepare(frame)
        with frame_scope(prepared) as pyramid:
            pyramid.convert_whole()
            return target.match(prepared, None)

    assert naive()[0]
    median = _median_ms(benchmark)
    if median is not None:
        a, b = _paired_samples(lambda: observer.verify_page(frame, page), naive, rounds=300)
        ours, whole = statistics.median(a), statistics.median(b)
        _, low, high = figures.ratio("verify_over_naive", a, b)
        benchmark.extra_info.update({"naive_ms": whole, "ratio": ours / whole, "ratio_95": [low, high]})
        RESULTS["verify_expected"] = median
        figures.add("verify_p50_ms", ours)
        figures.add("naive_verify_p50_ms", whole, kind="baseline")
        assert ours <= 0.75 * whole, (ours, whole)  # measured 0.355-0.366 over three runs beside other work


def test_bench_classify_all_pages_and_popups(benchmark, sim, figures):
    """Classify among every page and popup, against the naive ALAS-style classifier (below) on the same frames,
    timed in alternation, so that a busy machine slows both alike: ratio asserted <= 0.75 (measured 0.38-0.58 beside
    other work, issue 49)."""
    graph, assets, observer, frames = sim
    next_frame = _cycle(frames)

    def classify():
        page, frame = next_frame()
        return page, observer.observe(frame)

    benchmark.pedantic(classify, rounds=130, warmup_rounds=5)
    for page, frame in frames:
        assert observer.observe(frame).page == page
    median = _median_ms(benchmark)
    if median is not None:
        RESULTS["classify"] = median
        naive = NaiveAlas(graph, assets)
        ours_frame, naive_frame = _cycle(frames), _cycle(frames)
        a, b = _paired_samples(lambda: observer.observe(ours_frame()[1]),
                               lambda: naive.classify(naive_frame()[1]), rounds=20, block=len(frames))
        ours, baseline = statistics.median(a), statistics.median(b)
        _, low, high = figures.ratio("classify_over_naive_alas", a, b)
        benchmark.extra_info.update({"naive_alas_ms": baseline, "ratio": ours / baseline, "ratio_95": [low, high]})
        figures.add("classify_p50_ms", ours)
        figures.add("naive_alas_classify_p50_ms", baseline, kind="baseline")
        # Measured (issue 49, scripts/timing-spread.py, 6 rounds then): 0.38-0.58 over three runs beside other work;
        # 0.5 failed one run in three. With 20 rounds the bound leaves room over the spread's top.
        assert ours <= CLASSIFY_OVER_NAIVE * baseline, (ours, baseline, low, high)


class NaiveAlas:
    """ALAS's way: every page then popup in definition order, colour matchTemplate of each check button over its
    area widened by the offset, first hit wins. Templates are prepared once, as ALAS caches them too."""

    def __init__(self, graph, assets):
        self.checks = []
        for target in [*graph.pages, *graph.popups]:
            for sig in target.signatures:
                if isinstance(sig, TemplateSignature):
                    button = graph.button(sig.button) if sig.button else None
                    asset = sig.asset or (button.asset if button else None)
                    template = assets.get(asset) if asset else None
                    if template is None:
                        continue
                    x1, y1, x2, y2 = sig.area or button.area
                    dx, dy = sig.offset or (30, 30)
                    search = (max(0, x1 - dx), max(0, y1 - dy), min(1280, x2 + dx), min(720, y2 + dy))
                    self.checks.append((target.name, search, template.frames))
                    break

    def classify(self, frame):
        for name, (x1, y1, x2, y2), templates in self.checks:
            region = frame[y1:y2, x1:x2]
            for template in templates:
                if template.shape[0] > region.shape[0] or template.shape[1] > region.shape[1]:
                    continue
                if cv2.minMaxLoc(cv2.matchTemplate(region, template, cv2.TM_CCOEFF_NORMED))[1] > 0.85:
                    return name
        return None


def test_bench_classify_naive_alas_baseline(benchmark, sim):
    graph, assets, _, frames = sim
    naive = NaiveAlas(graph, assets)
    next_frame = _cycle(frames)
    benchmark.pedantic(lambda: naive.classify(next_frame()[1]), rounds=130, warmup_rounds=5)
    median = _median_ms(benchmark)
    if median is not None:
        RESULTS["naive"] = median


def test_bench_ocr_known_region(benchmark, figures):
    """Reading one known region is one recognition call with the fused recogniser (verifiers/ocrmodel.py): against
    RapidOCR's full pipeline on the same crop (text detection, angle classifier, recognition: the naive way) and
    against RapidOCR's recognition alone with the model as shipped, both timed in alternation with ours."""
    from rapidocr_onnxruntime import RapidOCR

    from verifiers import ocr

    frame = np.full((720, 1280, 3), 35, np.uint8)
    cv2.putText(frame, "Commission", (100, 100), cv2.FONT_HERSHEY_SIMPLEX, 1.2, (255, 255, 255), 2)
    ocr.read_text(frame, (90, 60, 400, 115))  # load the engine outside the measurement
    text, _ = benchmark.pedantic(ocr.read_text, args=(frame, (90, 60, 400, 115)), rounds=40, warmup_rounds=3)
    assert ocr.normalise(text) == "commission"
    median = _median_ms(benchmark)
    if median is not None:
        region = np.ascontiguousarray(frame[60:115, 90:400])
        shipped = RapidOCR(intra_op_num_threads=1, inter_op_num_threads=1, det_limit_type="max", print_verbose=False)
        c, d = _paired_samples(lambda: ocr.read_text(frame, (90, 60, 400, 115)), lambda: shipped(region), rounds=30)
        ours, full = statistics.median(c), statistics.median(d)
        figures.ratio("ocr_over_full_pipeline", c, d)
        a, b = _paired_samples(lambda: ocr.read_text(frame, (90, 60, 400, 115)),
                               lambda: shipped(region, use_det=False, use_cls=False, use_rec=True), rounds=150)
        mine, alone = statistics.median(a), statistics.median(b)
        _, low, high = figures.ratio("ocr_over_shipped_recognition", a, b)
        benchmark.extra_info.update({"full_pipeline_ms": full, "ratio": ours / full, "shipped_recognition_ms": alone,
                                     "ratio_to_shipped_recognition": mine / alone,
                                     "ratio_to_shipped_recognition_95": [low, high]})
        RESULTS["ocr"] = median
        figures.add("ocr_p50_ms", ours)
        figures.add("rapidocr_full_pipeline_p50_ms", full, kind="baseline")
        figures.add("rapidocr_shipped_recognition_p50_ms", alone, kind="baseline")
        print(f"\nfused OCR over RapidOCR's shipped recognition: {mine / alone:.3f} (95 % {low:.3f}-{high:.3f})")
        assert ours <= 0.85 * full, (ours, full)  # measured 0.65-0.70 over three runs beside other work (issue 49)
        # The fused model's gain is real but small: 0.93 (95 % interval 0.92-0.94) in each of 3 quiet runs of 300
        # alternated rounds, 0.92-0.97 beside two busy loops, where one interval reached 1.03; single short runs
        # measured up to 1.04 (issue 49). A gain inside that spread is not asserted: only "not slower", with room.
        assert mine <= NOT_SLOWER * alone, (mine, alone, low, high)


class _Canned(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # One buffered write per response and no Nagle: otherwise delayed ACKs add ~40 ms that are not ours.
    wbufsize = 1 << 16
    disable_nagle_algorithm = True
    BODY = json.dumps({"candidates": [{"content": {"role": "model", "parts": [{"text": json.dumps({
        "page": "page_main", "popup": None, "blocking_element": None, "ocr_text": None,
        "suggested_action": "retry", "confidence": 0.9})}]}, "finishReason": "STOP"}]}).encode()

    def do_POST(self):  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.BODY)))
        self.end_headers()
        self.wfile.write(self.BODY)

    def log_message(self, *args):
        pass


def test_bench_vision_round_trip_overhead(benchmark, sim, figures):
    """A classification through the real google-genai client against a local endpoint with a canned answer, against
    the same work done bare (encode the frame as the client does, POST it with http.client, parse the answer), the
    two timed in alternation on one server: the library and our validation cost a multiple of the bare round trip
    (measured 2.0-2.6x quiet, under two busy processes too), held to VISION_OVER_BARE."""
    from verifiers.vision import VisionClient

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Canned)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    client = VisionClient("bench-key", model="m", base_url=f"http://127.0.0.1:{httpd.server_address[1]}",
                          timeout_s=5)
    connection = None
    try:
        frame = sim[3][0][1].copy()
        counter = {"i": 0}

        def ask():
            counter["i"] += 1
            frame[0, 0, 0] = counter["i"] % 256  # a new frame each time: no cache hits
            frame[0, 1, 0] = counter["i"] // 256
            return client.classify(frame, ["page_main", "page_dock"], [])

        answer = benchmark.pedantic(ask, rounds=40, warmup_rounds=3)
        assert answer.page == "page_main" and not answer.cached
        median = _median_ms(benchmark)
        if median is not None:
            import http.client

            from engine.llm.images import QUALITIES

            connection = http.client.HTTPConnection("127.0.0.1", httpd.server_address[1], timeout=5)
            a, b = _paired_samples(ask, lambda: _bare_round_trip(connection, frame, QUALITIES[0]), rounds=40)
            ours, bare = statistics.median(a), statistics.median(b)
            _, low, high = figures.ratio("vision_over_bare", a, b)
            benchmark.extra_info.update({"bare_round_trip_ms": bare, "ratio": ours / bare, "ratio_95": [low, high]})
            RESULTS["vision"] = median
            figures.add("vision_round_trip_p50_ms", ours)
            figures.add("bare_round_trip_p50_ms", bare, kind="baseline")
            assert ours <= VISION_OVER_BARE * bare, (ours, bare)
    finally:
        if connection is not None:
            connection.close()
        client.close()  # its connection, before the server goes (else an unclosed transport at exit)
        httpd.shutdown()
        httpd.server_close()


VISION_OVER_BARE = 6.0
"""The client's round trip over the bare one, timed in alternation (measured: see the test's docstring; 2.7-4.0 over
three runs beside other work, issue 49)."""


def _bare_round_trip(connection, frame: np.ndarray, quality: int) -> None:
    """The same-run baseline: encode the frame as the client does, POST it with http.client, parse the answer."""
    import base64

    _, jpeg = cv2.imencode(".jpg", frame, [cv2.IMWRITE_JPEG_QUALITY, quality])
    body = json.dumps({"contents": [{"parts": [{"inlineData": {
        "mimeType": "image/jpeg", "data": base64.b64encode(jpeg.tobytes()).decode()}}]}]}).encode()
    connection.request("POST", "/v1beta/models/m:generateContent", body=body,
                       headers={"Content-Type": "application/json"})
    json.loads(connection.getresponse().read())


PEAK_RSS = """
import resource, sys
import cv2
from engine.config.loader import load_graph
from engine.observe.observer import Observer
from engine.sim import SyntheticAssets
graph = load_graph(server="en")
observer = Observer(graph, SyntheticAssets(graph))
for path in sys.argv[2:]:
    frame = cv2.imread(path)
    observer.observe(frame)
if sys.argv[1] == "ocr":
    from verifiers import ocr
    ocr.read_text(frame, (100, 100, 400, 140))
    ocr.find_text(frame)
# VmHWM is this process image's own peak; ru_maxrss would also count the (large) pytest parent it was forked from.
hwm = [line for line in open("/proc/self/status") if line.startswith("VmHWM:")]
print(int(hwm[0].split()[1]) // 1024 if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)
"""


@pytest.mark.parametrize("mode, limit_mb", [("plain", 200), ("ocr", 600)])
def test_peak_memory_of_observing(mode, limit_mb, sim, tmp_path):
    paths = []
    for i, (_, frame) in enumerate(sim[3][:4]):
        paths.append(str(tmp_path / f"{i}.png"))
        cv2.imwrite(paths[-1], frame)
    out = subprocess.run([sys.executable, "-c", PEAK_RSS, mode, *paths], cwd=ROOT, capture_output=True, text=True,
                         timeout=120, check=True)
    peak = int(out.stdout.split()[-1])
    RESULTS[f"rss_{mode}_mb"] = peak
    print(f"peak RSS ({mode}): {peak} MB", file=sys.stderr)
    assert peak <= limit_mb

