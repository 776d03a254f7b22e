from __future__ import annotations

import numpy as np
import pytest

from engine.config.assets import Template
from engine.config.schema import Graph, TemplateSignature
from verifiers import template

AREA = (400, 300, 480, 340)


def _graph(buttons):
    return Graph.model_validate({
        "game": "test", "resolution": (1280, 720), "servers": ["en"], "fallback_server": "en",
        "buttons": buttons, "pages": [{"name": "page_a"}],
    }).for_server("en")


class Pack:
    server = "en"

    def __init__(self, **templates):
        self.templates = {name.replace("__", "/"): t for name, t in templates.items()}

    def get(self, name):
        return self.templates.get(name)

    def names(self):
        return list(self.templates)


def _setup(frames, **sig):
    graph = _graph([{"name": "BTN", "area": AREA, "asset": "ui/BTN"}])
    pack = Pack(ui__BTN=Template("ui/BTN", tuple(frames), area=AREA))
    return template.compile_template(TemplateSignature(type="template", button="BTN", **sig), graph, pack)


def _paste(frame, crop, x, y):
    frame[y:y + crop.shape[0], x:x + crop.shape[1]] = crop
    return frame


def test_finds_a_shifted_template_and_reports_the_offset(noise_frame, textured):
    crop = textured(7, 40, 80)
    check = _setup([crop])
    evidence = check.verify(_paste(noise_frame, crop, AREA[0] + 7, AREA[1] - 5))
    assert evidence.hit and evidence.channel == "template"
    assert evidence.offset == (7, -5)
    assert evidence.box == (407, 295, 487, 335)
    assert evidence.score > 0.99


def test_misses_outside_the_widened_area(noise_frame, textured):
    crop = textured(7, 40, 80)
    check = _setup([crop], offset=(10, 10))
    evidence = check.verify(_paste(noise_frame, crop, AREA[0] + 40, AREA[1]))
    assert not evidence.hit and evidence.score < 0.85


def test_search_area_is_clipped_to_the_frame(noise_frame, make_graph, textured):
    graph = make_graph([{"name": "EDGE", "area": (1250, 690, 1280, 720), "asset": "ui/EDGE"}])
    crop = textured(3, 30, 30)
    pack = Pack(ui__EDGE=Template("ui/EDGE", (crop,)))
    check = template.compile_template(TemplateSignature(type="template", button="EDGE"), graph, pack)
    assert check.search == (1220, 660, 1280, 720)
    assert check.verify(_paste(noise_frame, crop, 1250, 690)).hit


def test_any_frame_of_a_multi_frame_template_may_match(noise_frame, textured):
    first, second = textured(1, 40, 80), textured(2, 40, 80)
    check = _setup([first, second])
    assert check.verify(_paste(noise_frame, second, *AREA[:2])).hit


def test_colour_confirmation_rejects_a_gray_twin(textured):
    base = textured(5, 40, 80, 90, 160).astype(np.int16)
    twin = base.copy()
    # Same luminance (gray weights 0.114 B + 0.299 R), different colour: gray matching cannot tell them apart.
    twin[..., 2] += 40
    twin[..., 0] -= 105
    twin = np.clip(twin, 0, 255).astype(np.uint8)
    base = base.astype(np.uint8)
    frame = _paste(np.full((720, 1280, 3), 30, np.uint8), twin, *AREA[:2])
    assert _setup([base]).verify(frame).hit
    assert not _setup([base], color=True).verify(frame).hit
    assert _setup([base], color=True).verify(_paste(frame, base, *AREA[:2])).hit


def test_threshold_comes_from_the_signature_or_the_defaults(noise_frame, textured):
    crop = textured(9, 40, 80)
    noisy = np.clip(crop.astype(np.int16) + np.random.default_rng(0).integers(-90, 90, crop.shape), 0, 255)
    frame = _paste(noise_frame, noisy.astype(np.uint8), *AREA[:2])
    score = _setup([crop]).verify(frame).score
    assert 0.3 < score < 0.95
    assert _setup([crop], threshold=score - 0.05).verify(frame).hit
    assert not _setup([crop], threshold=min(1.0, score + 0.05)).verify(frame).hit


def test_a_flat_template_is_colour_evidence_only(noise_frame):
    flat = np.full((20, 20, 3), (10, 200, 250), np.uint8)
    check = _setup([flat])
    assert check.weak and check.cost == 0
    evidence = check.verify(_paste(noise_frame, flat, *AREA[:2]))
    assert evidence.hit and evidence.channel == "color"


def _title(lines):
    """A wide plain bar with thin marks on it (a title's glyphs): little variance, yet the marks are the title."""
    bar = np.full((AREA[3] - AREA[1], AREA[2] - AREA[0], 3), (60, 75, 115), np.uint8)
    for x1, y1, x2, y2 in lines:
        bar[y1:y2 + 1, x1:x2 + 1] = (20, 25, 60)
    return bar


def test_thin_marks_on_a_plain_bar_are_texture_not_a_flat_colour(noise_frame):
    # generated seed 251239: two titles with the same colours, their glyphs 2 % of the bar, matched each other
    # by mean colour (std 7.9 and 8.0, under FLAT_STD) and a goto to one was confirmed on the other
    one, other = _title([(5, 10, 40, 10), (20, 5, 20, 25)]), _title([(60, 3, 60, 35), (10, 30, 30, 30)])
    for bar in (one, other):
        gray = bar.mean(axis=2)
        assert gray.std() < template.FLAT_STD and not template.is_flat(bar[:, :, 0])
    check = _setup([one])
    assert check.verify(_paste(noise_frame.copy(), one, *AREA[:2])).hit
    missed = check.verify(_paste(noise_frame.copy(), other, *AREA[:2]))
    assert missed.channel == "template" and not missed.hit


def test_missing_asset_is_a_verification_error(make_graph):
    graph = make_graph([{"name": "BTN", "area": AREA, "asset": "ui/NOPE"}])
    with pytest.raises(template.MissingAsset):
        template.compile_template(TemplateSignature(type="template", button="BTN"), graph, Pack())


def test_real_alas_template_on_a_real_screenshot(shared_dir, make_graph):
    import cv2

    from engine.config.assetpacks import AlasAssetPack

    pack = AlasAssetPack(shared_dir / "alas", "cn")
    back = pack.get("ui/MAIN_GOTO_FLEET")
    graph = make_graph([{"name": "MAIN_GOTO_FLEET", "area": back.area, "asset": "ui/MAIN_GOTO_FLEET"}])
    check = template.compile_template(TemplateSignature(type="template", button="MAIN_GOTO_FLEET"), graph, pack)
    main = cv2.resize(cv2.imread(str(shared_dir / "screens/frames/alas_wiki/ui2.png")), (1280, 720),
                      interpolation=cv2.INTER_AREA)
    assert check.verify(main).hit
    storage = cv2.imread(str(shared_dir / "screens/frames/alas_history/module_recycle_test0.png"))
    assert not check.verify(storage).hit


@pytest.mark.parametrize("area, size, offset, scale", [
    ((401, 302, 481, 350), (48, 80), None, 4),  # quarter scale, then full scale around the coarse best
    ((401, 302, 481, 342), (40, 80), None, 2),  # under 48 px a side: a quarter of it would lose its shape
    ((403, 301, 483, 341), (40, 80), (10, 10), 2),
    ((402, 303, 432, 313), (10, 30), None, 1),
])
def test_matching_the_areas_alone_equals_matching_the_whole_frame(noise_frame, textured, make_graph, area, size,
                                                                  offset, scale):
    from engine.config.assets import Template
    from verifiers.common import frame_scope

    crop = textured(4, *size)
    graph = make_graph([{"name": "BTN", "area": area, "asset": "ui/BTN"}])
    pack = Pack(ui__BTN=Template("ui/BTN", (crop,), area=area))
    check = template.compile_template(TemplateSignature(type="template", button="BTN", offset=offset), graph, pack)
    assert check.scale == scale
    for dx, dy in ((0, 0), (3, -2), (-5, 7)):
        frame = _paste(noise_frame.copy(), crop, area[0] + dx, area[1] + dy)
        with frame_scope(frame) as pyramid:
            alone = check.verify(frame)
            assert not pyramid.whole  # only the search area was converted
        with frame_scope(frame) as pyramid:
            pyramid.convert_whole()
            whole = check.verify(frame)
        assert alone.hit and (alone.score, alone.box) == (whole.score, whole.box)


def test_areas_adding_up_to_more_than_the_frame_convert_the_whole_frame_once(noise_frame):
    import cv2

    from verifiers.common import Pyramid

    pyramid = Pyramid(noise_frame)
    rows = [(0, y, 1280, y + 180) for y in range(0, 720, 180)]  # four quarters: the whole frame, area by area
    for box in rows:
        pyramid.area(box)
    assert not pyramid.whole
    gray = cv2.cvtColor(noise_frame, cv2.COLOR_BGR2GRAY)
    assert (pyramid.area((10, 10, 50, 30)) == gray[10:30, 10:50]).all() and pyramid.whole
