from __future__ import annotations

import json

import cv2
import numpy as np

from engine.__main__ import main


def test_observe_json_one_line_per_frame_including_unknown_and_1080p(shared_dir, tmp_path, capsys):
    folder = tmp_path / "frames"
    folder.mkdir()
    main_1080 = shared_dir / "screens/frames/alas_wiki/ui2.png"
    (folder / "a_main.png").write_bytes(main_1080.read_bytes())
    cv2.imwrite(str(folder / "b_noise.png"), np.random.default_rng(0).integers(0, 256, (720, 1280, 3), np.uint8))
    code = main(["observe", "--json", "--assets", str(shared_dir / "alas"), "--server", "cn", str(folder)])
    assert code == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["file"].rsplit("/", 1)[-1] for line in lines] == ["a_main.png", "b_noise.png"]
    assert lines[0]["page"] == "page_main" and lines[1]["page"] is None
    for line in lines:
        assert {"file", "page", "popups", "latency_ms", "confidence", "evidence"} <= set(line)


def test_observe_text_output_on_simulated_frames(tmp_path, capsys):
    from engine.loader import load_graph
    from engine.sim import SimGame, SyntheticAssets

    graph = load_graph(server="en")
    game = SimGame(graph, assets=SyntheticAssets(graph))
    game.goto("page_commission")
    path = tmp_path / "commission.png"
    cv2.imwrite(str(path), game.frame())
    assert main(["observe", "--server", "en", str(path)]) == 0
    assert "page_commission" in capsys.readouterr().out


def test_observe_unreadable_file_is_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"not an image")
    assert main(["observe", str(bad)]) == 2


def test_capture_crops_a_button_from_the_embedded_simulator(tmp_path, capsys):
    from engine.assetpacks import DirectoryAssetPack

    out = tmp_path / "captured"
    assert main(["assets", "capture", "GOTO_MAIN", "--out", str(out)]) == 0
    record = json.loads(capsys.readouterr().out)
    pack = DirectoryAssetPack(out)
    template = pack.get(record["name"])
    x1, y1, x2, y2 = record["area"]
    assert template.frames[0].shape == (y2 - y1, x2 - x1, 3)
