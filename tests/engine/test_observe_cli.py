from __future__ import annotations

import json
import struct

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
    from engine.config.loader import load_graph
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


def test_observe_over_a_folder_reports_each_bad_file_and_goes_on(tmp_path, capsys):
    folder = tmp_path / "frames"
    folder.mkdir()
    cv2.imwrite(str(folder / "a_grey.png"), np.full((720, 1280, 3), 128, np.uint8))
    (folder / "b_junk.png").write_bytes(b"not an image")
    header = struct.pack(">IIBBBBB", 20000, 20000, 8, 2, 0, 0, 0)  # a 20000x20000 PNG, refused from its header
    (folder / "c_huge.png").write_bytes(b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + header + bytes(4))
    cv2.imwrite(str(folder / "d_portrait.png"), np.full((1280, 720, 3), 90, np.uint8))
    cv2.imwrite(str(folder / "e_grey.png"), np.full((720, 1280, 3), 128, np.uint8))
    assert main(["observe", "--server", "en", str(folder)]) == 2
    out, err = capsys.readouterr()
    assert [line.split(":")[0].rsplit("/", 1)[-1] for line in out.splitlines()] == ["a_grey.png", "e_grey.png"]
    errors = err.splitlines()
    assert "b_junk.png" in errors[0] and "c_huge.png" in errors[1] and "refused without decoding" in errors[1]
    assert "d_portrait.png" in errors[2] and "portrait" in errors[2]
    assert errors[3].startswith("error: 3 of 5 frame file(s) could not be observed")


def test_capture_crops_a_button_from_the_embedded_simulator(tmp_path, capsys):
    from engine.config.assetpacks import DirectoryAssetPack

    out = tmp_path / "captured"
    assert main(["assets", "capture", "GOTO_MAIN", "--out", str(out)]) == 0
    record = json.loads(capsys.readouterr().out)
    pack = DirectoryAssetPack(out)
    template = pack.get(record["name"])
    x1, y1, x2, y2 = record["area"]
    assert template.frames[0].shape == (y2 - y1, x2 - x1, 3)
