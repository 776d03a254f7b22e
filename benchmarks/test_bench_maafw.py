"""Side by side with MaaFramework (issue 13, part 6): the same TemplateMatch recognitions through maafw and
through our observer, on the same simulator frames, in the same run.

Every template signature of every page and popup of the Azur Lane graph (en, synthetic asset pack) becomes a
maafw TemplateMatch with the same template image, the same ROI (the signature's area widened by its search
offset) and the same threshold. Frames are the simulator's: every page, and every popup over its host page.
Measured, wall clock (maafw works in its own threads): one match (maafw `post_recognition` on the frame; a
pipeline node run by `post_task` with pre/post delays 0 through a CustomController whose screencap returns the
frame; our `verify_page`), and classify-all (maafw: every template on one frame, all posted then waited; ours:
`Observer.observe`, which also checks the colour signatures maafw is not asked for). OCR is left out: maafw's OCR
needs PaddleOCR model files it does not ship. Target: our classify-all at most 0.5x maafw's.

Needs the `bench` extra (`pip install .[bench]`); skipped without maafw. CI runs a short form (MAAFW_FRAMES,
default 8 frames, 1 round); `MAAFW_FRAMES=0` uses every frame.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time

import numpy as np
import pytest

maa = pytest.importorskip("maa", reason="maafw (the `bench` extra) is not installed")

from maa.controller import CustomController  # noqa: E402
from maa.pipeline import JRecognitionType, JTemplateMatch  # noqa: E402
from maa.resource import Resource  # noqa: E402
from maa.tasker import Tasker  # noqa: E402

from engine.config.loader import load_graph  # noqa: E402
from engine.config.schema import AnyOfSignature, TemplateSignature  # noqa: E402
from engine.observe.observer import Observer  # noqa: E402
from engine.sim import SimGame, SyntheticAssets  # noqa: E402

pytestmark = pytest.mark.timing  # a speed assertion: runs alone (the README's last pytest)

FRAMES = int(os.environ.get("MAAFW_FRAMES", "8"))
ROUNDS = int(os.environ.get("MAAFW_ROUNDS", "1"))


class FrameController(CustomController):
    """A maafw controller whose screencap returns the frame under test; input does nothing."""

    def __init__(self, width: int, height: int) -> None:
        super().__init__()
        self.frame = np.zeros((height, width, 3), np.uint8)

    def connect(self) -> bool:
        return True

    def request_uuid(self) -> str:
        return "simulator-frame"

    def screencap(self) -> np.ndarray:
        return self.frame

    def start_app(self, intent: str) -> bool:
        return True

    def stop_app(self, intent: str) -> bool:
        return True

    def click(self, x: int, y: int) -> bool:
        return True

    def swipe(self, x1: int, y1: int, x2: int, y2: int, duration: int) -> bool:
        return True

    def touch_down(self, contact: int, x: int, y: int, pressure: int) -> bool:
        return True

    def touch_move(self, contact: int, x: int, y: int, pressure: int) -> bool:
        return True

    def touch_up(self, contact: int) -> bool:
        return True

    def click_key(self, keycode: int) -> bool:
        return True

    def input_text(self, text: str) -> bool:
        return True

    def key_down(self, keycode: int) -> bool:
        return True

    def key_up(self, keycode: int) -> bool:
        return True

    def scroll(self, dx: int, dy: int) -> bool:
        return True

    def relative_move(self, dx: int, dy: int) -> bool:
        return True

    def shell(self, cmd: str, timeout: int):
        return ""

    def inactive(self) -> bool:
        return True

    def get_custom_info(self) -> dict:
        return {}


def _templates(graph, screen, signatures):
    for sig in signatures:
        if isinstance(sig, AnyOfSignature):
            yield from _templates(graph, screen, sig.of)
        elif isinstance(sig, TemplateSignature):
            button = graph.button(sig.button) if sig.button else None
            yield sig, (sig.asset or button.asset), tuple(sig.area or button.area)


def template_checks(graph, assets) -> list[dict]:
    """Every template signature of every page and popup as a maafw TemplateMatch (name, template, roi, threshold)."""
    width, height = graph.resolution
    checks = []
    screens = [(p, p.signatures) for p in graph.pages] + [(None, p.signatures) for p in graph.popups]
    for page, signatures in screens:
        settings = graph.settings(page)
        for sig, asset, (x1, y1, x2, y2) in _templates(graph, page, signatures):
            if asset is None or assets.get(asset) is None:
                continue
            ox, oy = sig.offset or settings.template_offset
            rx1, ry1, rx2, ry2 = max(0, x1 - ox), max(0, y1 - oy), min(width, x2 + ox), min(height, y2 + oy)
            threshold = sig.threshold if sig.threshold is not None else settings.template_threshold
            checks.append({"name": f"chk{len(checks)}", "template": asset, "roi": (rx1, ry1, rx2 - rx1, ry2 - ry1),
                           "threshold": float(threshold)})
    return checks


@pytest.fixture(scope="module")
def rig():
    graph = load_graph(server="en")
    assets = SyntheticAssets(graph)
    game = SimGame(graph, assets=assets)
    frames = []
    for page in graph.pages:
        if page.signatures:
            game.goto(page.name)
            frames.append(game.frame())
    for popup in graph.popups:
        game.goto((popup.pages or ["page_main"])[0])
        game.show_popup(popup.name)
        frames.append(game.frame())
    if FRAMES:
        frames = frames[:: max(1, len(frames) // FRAMES)][:FRAMES]
    checks = template_checks(graph, assets)
    Tasker.set_log_dir(tempfile.mkdtemp(prefix="maafw-log-"))
    Tasker.set_save_draw(False)
    resource = Resource()
    for asset in {c["template"] for c in checks}:
        resource.override_image(asset, assets.get(asset).frames[0])
    resource.override_pipeline({c["name"]: {
        "recognition": {"type": "TemplateMatch",
                        "param": {"template": [c["template"]], "roi": list(c["roi"]), "threshold": c["threshold"]}},
        "action": {"type": "DoNothing"}, "pre_delay": 0, "post_delay": 0, "rate_limit": 0, "timeout": 0,
    } for c in checks})
    controller = FrameController(*graph.resolution)
    controller.post_connection().wait()
    tasker = Tasker()
    tasker.bind(resource, controller)
    assert tasker.inited
    return graph, Observer(graph, assets), frames, checks, tasker, controller


def _param(check: dict) -> JTemplateMatch:
    return JTemplateMatch(template=[check["template"]], roi=check["roi"], threshold=[check["threshold"]])


def maafw_classify_all(tasker, frame, checks) -> int:
    jobs = [tasker.post_recognition(JRecognitionType.TemplateMatch, _param(c), frame) for c in checks]
    return sum(1 for job in jobs if (detail := job.wait().get()) and detail.nodes and detail.nodes[0].recognition.hit)


def _p50_ms(samples) -> float:
    return 1000 * statistics.median(samples)


def _timed(fn, *args) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


@pytest.mark.benchmark
def test_classify_all_against_maafw(rig, capsys, figures):
    graph, observer, frames, checks, tasker, controller = rig
    ours_all, maa_all, ours_one, maa_one, maa_node = [], [], [], [], []
    page = graph.pages[0].name
    maafw_classify_all(tasker, frames[0], checks)  # warm-up: maafw's first match per template loads it
    observer.observe(frames[0])
    for _ in range(ROUNDS):
        for frame in frames:
            ours_all.append(_timed(observer.observe, frame))
            maa_all.append(_timed(maafw_classify_all, tasker, frame, checks))
            ours_one.append(_timed(observer.verify_page, frame, page))
            maa_one.append(_timed(lambda: tasker.post_recognition(
                JRecognitionType.TemplateMatch, _param(checks[0]), frame).wait()))
            controller.frame = frame
            maa_node.append(_timed(lambda: tasker.post_task(checks[0]["name"]).wait()))
    ratio = statistics.median(ours_all) / statistics.median(maa_all)
    with capsys.disabled():
        print(f"\nmaafw side by side ({len(frames)} frames x {ROUNDS} rounds, {len(checks)} template checks, "
              f"{len(graph.pages)} pages + {len(graph.popups)} popups): classify-all ours p50 {_p50_ms(ours_all):.2f} ms, "
              f"maafw p50 {_p50_ms(maa_all):.2f} ms, ratio {ratio:.3f}; one match: our verify_page "
              f"{_p50_ms(ours_one):.3f} ms, maafw post_recognition {_p50_ms(maa_one):.3f} ms, maafw pipeline node "
              f"(post_task, screencap by CustomController) {_p50_ms(maa_node):.3f} ms; maafw per template in "
              f"classify-all {_p50_ms(maa_all) / len(checks):.3f} ms")
    for name, times in (("classify_all_ours", ours_all), ("classify_all_maafw", maa_all), ("one_match_ours", ours_one),
                        ("one_match_maafw", maa_one), ("pipeline_node_maafw", maa_node)):
        figures.add(f"{name}_p50", _p50_ms(times))
    figures.ratio("classify_all_ratio", ours_all, maa_all)
    assert ratio <= 0.5  # timed in alternation with maafw's, frame by frame; the absolute times are printed above
