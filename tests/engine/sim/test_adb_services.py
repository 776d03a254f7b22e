"""What real clients ask the fake ADB server beyond screencap and input: the app's lifecycle and names from the graph,
device facts, the sync service, forward / reverse, ``VAR=value`` prefixes and the emulated touch agents, through
adbutils and through Debian's adb client."""

from __future__ import annotations

import os
import shutil
import subprocess
import time

import adbutils
import pytest

from engine.config.schema import App
from engine.sim import FakeAdbServer, SimGame
from tests.ports import free_port

ADB = shutil.which("adb")
needs_adb = pytest.mark.skipif(ADB is None and not os.environ.get("CI"), reason="the adb client is not installed")
PACKAGE = {"en": "com.example.tiny.en", "cn": "com.example.tiny.cn"}
ACTIVITY = "com.example.tiny.MainActivity"


@pytest.fixture
def app_served(tiny_graph_all_servers, clock):
    """The tiny game with per-server app names, resolved for cn, served as sim-0."""
    graph = tiny_graph_all_servers.model_copy(update={"app": App(package=PACKAGE, activity=ACTIVITY)}).resolve("cn")
    game = SimGame(graph, clock=clock)
    with FakeAdbServer({"sim-0": game}) as server:
        yield server, game


def _device(server: FakeAdbServer) -> adbutils.AdbDevice:
    return adbutils.AdbClient("127.0.0.1", server.port).device("sim-0")


def test_the_app_has_the_graphs_names_and_stops_and_starts(app_served):
    server, game = app_served
    d = _device(server)
    package = PACKAGE["cn"]
    assert f"mCurrentFocus=Window{{7f3a u0 {package}/{ACTIVITY}}}" in d.shell("dumpsys window windows")
    assert f"package:{package}" in d.shell("pm list packages").splitlines()
    assert d.shell("pm list packages tiny").strip() == f"package:{package}"
    game.goto("page_main")
    d.shell(f"am force-stop {package}")
    assert "com.android.launcher3" in d.shell("dumpsys window")
    assert d.shell2(f"pidof {package}").returncode == 1
    assert d.screenshot().getextrema() == ((0, 0), (0, 0), (0, 0))
    d.click(320, 275)  # nothing to tap on a stopped app
    assert game.truth()["taps"] == 0
    assert "Events injected: 1" in d.shell(f"monkey -p {package} -c android.intent.category.LAUNCHER 1")
    assert game.truth()["page"] == "page_login" and d.screenshot().getextrema() != ((0, 0), (0, 0), (0, 0))
    assert d.shell(f"pidof {package}").strip() == "4242"
    game.goto("page_main")
    d.shell(f"am force-stop {package}")
    assert "cmp=" in d.shell(f"am start -n {package}/{ACTIVITY}")
    assert game.truth()["page"] == "page_login"
    assert "unable to resolve" in d.shell("am start -n com.other/.Main")
    d.shell("am force-stop com.other")  # another package: the game keeps running
    assert not server.devices["sim-0"].stopped


def test_device_facts_answer(app_served):
    d = _device(app_served[0])
    assert d.shell("wm size").strip() == "Physical size: 640x360"
    display = d.shell("dumpsys display")
    assert "DisplayViewport{" in display and "orientation=0" in display
    assert "deviceWidth=640, deviceHeight=360}" in display
    facts = [d.shell(f"getprop {key}").strip() for key in
             ("ro.product.cpu.abi", "ro.build.version.sdk", "ro.product.model", "ro.product.manufacturer")]
    assert all(facts) and facts[0] == "x86_64" and facts[1].isdigit()
    assert d.shell("FOO=1 BAR=two echo hi").strip() == "hi"


def test_sync_push_stat_pull(app_served):
    server, _ = app_served
    d = _device(server)
    d.sync.push(b"\x7fELF agent", "/data/local/tmp/agent", 0o755)
    info = d.sync.stat("/data/local/tmp/agent")
    assert info.size == 10 and info.mode & 0o777 == 0o755
    assert d.sync.read_bytes("/data/local/tmp/agent") == b"\x7fELF agent"
    assert d.sync.stat("/data/local/tmp/missing").mode == 0
    assert d.shell("ls /data/local/tmp/agent").strip() == "/data/local/tmp/agent"
    d.shell("rm /data/local/tmp/agent")
    assert not d.sync.exists("/data/local/tmp/agent")


def test_forward_list_kill_and_reverse(app_served):
    server, _ = app_served
    d = _device(server)
    d.forward(f"tcp:{free_port()}", "localabstract:minitouch")
    (item,) = d.forward_list()
    assert item.serial == "sim-0" and item.remote == "localabstract:minitouch"
    d.forward_remove(item.local)
    assert d.forward_list() == []
    d.reverse("tcp:9000", "tcp:9001")
    assert [(r.remote, r.local) for r in d.reverse_list()] == [("tcp:9000", "tcp:9001")]
    d.reverse_remove("tcp:9000")
    assert d.reverse_list() == []


def test_emulated_maatouch_and_minitouch_turn_lines_into_taps(app_served):
    server, game = app_served
    d = _device(server)
    d.sync.push(b"dex", "/data/local/tmp/maatouch")
    stream = d.shell("CLASSPATH=/data/local/tmp/maatouch app_process / com.shxyke.MaaTouch.App", stream=True)
    with stream:
        reader = stream.conn.makefile("rb")
        assert reader.readline() == b"^ 2 640 360 50\n" and reader.readline().startswith(b"$ ")
        stream.conn.sendall(b"d 0 320 275 50\nc\nu 0\nc\ns 7\n")
        assert reader.readline() == b"7\n" and game.truth()["page"] == "page_main"
        reader.close()
    d.sync.push(b"elf", "/data/local/tmp/minitouch")
    holder = d.shell("/data/local/tmp/minitouch", stream=True)
    with holder:
        assert _wait(lambda: "minitouch" in server.devices["sim-0"].sockets)
        sock = d.create_connection(adbutils.Network.LOCAL_ABSTRACT, "minitouch")
        with sock:
            reader = sock.makefile("rb")
            assert [reader.readline() for _ in range(3)][:2] == [b"v 1\n", b"^ 10 32767 32767 0\n"]
            sock.sendall(b"d 0 2000 20000 50\nc\nw 150\nm 0 30000 20000 50\nc\nu 0\nc\n")
            assert _wait(lambda: game.truth()["swipes"] == 1)
            reader.close()
    assert _wait(lambda: "minitouch" not in server.devices["sim-0"].sockets), "its socket goes with its shell"


def _wait(predicate, seconds: float = 2.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end and not predicate():
        time.sleep(0.005)
    return predicate()


def adb(server: FakeAdbServer, *args: str) -> subprocess.CompletedProcess:
    assert ADB is not None, "CI needs the adb client on PATH"
    return subprocess.run([ADB, "-P", str(server.port), "-s", "sim-0", *args], capture_output=True, timeout=20)


@needs_adb
def test_debian_adb_push_forward_and_app_commands(app_served, tmp_path):
    server, game = app_served
    package = PACKAGE["cn"]
    agent = tmp_path / "maatouch"
    agent.write_bytes(b"dex" * 1000)
    pushed = adb(server, "push", str(agent), "/data/local/tmp/maatouch")
    assert pushed.returncode == 0, pushed.stderr
    assert server.devices["sim-0"].files["/data/local/tmp/maatouch"] == agent.read_bytes()
    port = free_port()
    assert adb(server, "forward", f"tcp:{port}", "localabstract:minitouch").returncode == 0
    listed = adb(server, "forward", "--list")
    assert f"sim-0 tcp:{port} localabstract:minitouch" in listed.stdout.decode()
    assert adb(server, "forward", "--remove", f"tcp:{port}").returncode == 0
    assert server.forwards() == {}
    assert package in adb(server, "shell", "dumpsys", "window", "windows").stdout.decode()
    assert f"package:{package}" in adb(server, "shell", "pm", "list", "packages").stdout.decode()
    assert adb(server, "shell", "am", "force-stop", package).returncode == 0
    png = adb(server, "exec-out", "screencap", "-p")
    assert png.returncode == 0 and server.devices["sim-0"].stopped
    started = adb(server, "shell", "monkey", "-p", package, "-c", "android.intent.category.LAUNCHER", "1")
    assert started.returncode == 0 and game.truth()["page"] == "page_login"
    assert adb(server, "shell", "getprop", "ro.product.cpu.abi").stdout == b"x86_64\n"
