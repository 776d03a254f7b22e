from __future__ import annotations

import json

import numpy as np
import pytest

from engine.config.assetpacks import (
    AlasAssetPack,
    DirectoryAssetPack,
    load_pack,
    new_index,
    nonblack_bbox,
    save_index,
    write_template,
)
from engine.config.assets import Template


def test_alas_pack_crops_to_the_area_alas_declares(shared_dir, alas_graph_json):
    pack = AlasAssetPack(shared_dir / "alas", "en")
    facts = alas_graph_json["link_buttons"]["BACK_ARROW"]["en"]
    template = pack.get("ui/BACK_ARROW")
    assert template.area == tuple(facts["area"])
    assert template.click == tuple(facts["button"])
    x1, y1, x2, y2 = template.area
    assert template.frames[0].shape == (y2 - y1, x2 - x1, 3)


def test_alas_pack_reads_every_gif_frame_and_accepts_the_assets_folder(shared_dir):
    pack = AlasAssetPack(shared_dir / "alas" / "assets", "en")
    assert len(pack.get("handler/POPUP_CONFIRM").frames) == 3
    assert pack.get("POPUP_CONFIRM").name == "handler/POPUP_CONFIRM"  # bare names when unique


def test_alas_pack_falls_back_to_the_fallback_it_is_given(shared_dir):
    pack = AlasAssetPack(shared_dir / "alas", "en", fallback="cn")
    assert not (shared_dir / "alas/assets/en/ui_white/POPUP_SINGLE_WHITE.png").exists()
    assert pack.source("ui_white/POPUP_SINGLE_WHITE")[1] == "cn"
    assert pack.get("ui_white/POPUP_SINGLE_WHITE") is not None
    assert pack.get("ui/NO_SUCH_THING") is None
    with pytest.raises(ValueError):
        pack.get("../secrets")
    # No fallback unless one is given: nothing assumes cn.
    alone = AlasAssetPack(shared_dir / "alas", "en")
    assert alone.source("ui_white/POPUP_SINGLE_WHITE") is None and alone.get("ui_white/POPUP_SINGLE_WHITE") is None
    assert "ui_white/POPUP_SINGLE_WHITE" not in set(alone.names())
    # Any declared server may be the fallback: tw takes en's file where it has none of its own.
    assert not (shared_dir / "alas/assets/tw/ui/CAMPAIGN_CHECK.png").exists()
    assert AlasAssetPack(shared_dir / "alas", "tw", fallback="en").source("ui/CAMPAIGN_CHECK")[1] == "en"


@pytest.mark.parametrize("server", ["jp", "tw"])
def test_load_pack_takes_the_graphs_fallback_server(shared_dir, server):
    from engine.config.loader import load_graph

    graph = load_graph().resolve(server)
    pack = load_pack(shared_dir / "alas", graph.server, fallback=graph.fallback_server)
    assert isinstance(pack, AlasAssetPack) and (pack.server, pack.fallback) == (server, graph.fallback_server)
    assert pack.source("ui/COMMISSION_CHECK")[1] == server
    assert pack.source("ui/ISLAND_CHECK")[1] == graph.fallback_server  # ALAS has no jp/tw file of it


def test_an_alas_folder_without_the_server_is_a_config_error(shared_dir):
    from engine.core.errors import ConfigError

    with pytest.raises(ConfigError, match="no assets for server 'kr'.*cn, en, jp, tw"):
        load_pack(shared_dir / "alas", "kr")


def test_nonblack_bbox():
    image = np.zeros((10, 20, 3), np.uint8)
    assert nonblack_bbox(image) is None
    image[2:5, 3:9, 1] = 7
    assert nonblack_bbox(image) == (3, 2, 9, 5)


def test_directory_pack_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    frames = tuple(rng.integers(0, 256, (12, 30, 3), dtype=np.uint8) for _ in range(2))
    index = new_index("en")
    write_template(tmp_path, Template("ui/BTN", frames, area=(1, 2, 31, 14), click=(0, 0, 40, 20)), index)
    save_index(tmp_path, index)
    pack = load_pack(tmp_path)
    assert isinstance(pack, DirectoryAssetPack) and pack.server == "en"
    got = pack.get("ui/BTN")
    assert got.area == (1, 2, 31, 14) and got.click == (0, 0, 40, 20)
    assert len(got.frames) == 2 and all(np.array_equal(a, b) for a, b in zip(got.frames, frames))
    assert list(pack.names()) == ["ui/BTN"]
    assert json.loads((tmp_path / "index.json").read_text())["templates"]["ui/BTN"]["frames"] == 2


def test_load_pack_recognises_alas_and_needs_a_server(shared_dir):
    from engine.core.errors import ConfigError

    assert isinstance(load_pack(shared_dir / "alas", "cn"), AlasAssetPack)
    with pytest.raises(ConfigError):
        load_pack(shared_dir / "alas")


def test_load_pack_tells_the_layouts_apart_by_depth_not_by_server_names(tmp_path):
    import cv2

    frame = np.zeros((720, 1280, 3), np.uint8)
    frame[10:20, 30:50] = 200
    alas = tmp_path / "alas" / "assets" / "xx" / "ui"
    ours = tmp_path / "ours" / "ui"
    for folder in (alas, ours):
        folder.mkdir(parents=True)
    cv2.imwrite(str(alas / "BTN.png"), frame)
    cv2.imwrite(str(ours / "BTN.png"), frame[10:20, 30:50])
    pack = load_pack(tmp_path / "alas", "xx")  # a server ALAS never had: found by the layout alone
    assert isinstance(pack, AlasAssetPack) and pack.get("ui/BTN").area == (30, 10, 50, 20)
    plain = load_pack(tmp_path / "ours")
    assert isinstance(plain, DirectoryAssetPack) and plain.get("ui/BTN").frames[0].shape == (10, 20, 3)
