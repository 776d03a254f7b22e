"""Stuck detection: the click record, the repeat detector and the watchdog answer with reasons, never raise."""

from engine.core.stuck import ClickRecord, ProgressWatchdog, RepeatDetector, Settling


def test_one_button_twelve_times_in_fifteen_aborts():
    record = ClickRecord()
    reasons = [record.add("A" if i % 5 else "B") for i in range(15)]
    # 12 of 15 are A (i % 5 != 0 for 12 values of i): the 15th click trips it, none before.
    assert reasons[:14] == [None] * 14
    assert reasons[14] is not None and "A" in reasons[14]


def test_varied_clicks_never_abort():
    record = ClickRecord()
    assert all(record.add(f"B{i % 7}") is None for i in range(100))


def test_two_buttons_alternating_six_times_each_abort():
    record = ClickRecord()
    reasons = [record.add("X" if i % 2 == 0 else "Y") for i in range(12)]
    assert reasons[:11] == [None] * 11
    assert "alternate" in reasons[11]


def test_two_buttons_not_alternating_do_not_count_as_ping_pong():
    record = ClickRecord()
    seq = ["X"] * 6 + ["Y"] * 6
    assert [record.add(b) for b in seq] == [None] * 12


def test_repeat_detector_warns_at_three_and_aborts_at_five():
    detector = RepeatDetector()
    verdicts = [detector.add("tap", [1, 2], "page_main")[0] for _ in range(5)]
    assert verdicts == ["ok", "ok", "warn", "warn", "abort"]


def test_repeat_detector_only_counts_identical_entries_in_its_window():
    detector = RepeatDetector()
    for i in range(20):
        verdict, _ = detector.add("tap", [i % 4], "page_main")
        assert verdict == "ok"  # each entry repeats twice per window of 8 at most


def test_watchdog_resets_on_a_new_page_and_trips_without_one():
    dog = ProgressWatchdog(limit=3)
    assert dog.step("a") is None
    assert dog.step("a") is None
    assert dog.step("b") is None
    assert dog.step("b") is None and dog.step(None) is None
    assert dog.step("a") is not None


def test_an_unknown_screen_ends_the_wait_after_unknown_s_only_after_a_link_that_misled():
    """Settling.unknown_s (a hop through a link that led to a screen nobody names before): such a screen, seen for
    unknown_s since the frame moved, ends the wait, still or swaying (a page the graph never drew may move); without
    unknown_s the allowance is waited out as before; a loading screen, or a known page between, starts the count
    again."""
    plain, after_misled = Settling("page_a"), Settling("page_a", unknown_s=2.0)
    for settling in (plain, after_misled):
        assert not settling.see(None, False, False, True, now=0.0)  # the tap moved the frame
        assert not settling.see(None, False, False, False, now=1.9)
    assert not plain.see(None, False, False, False, now=30.0)  # waited out by the allowance, as before
    assert after_misled.see(None, False, False, False, now=2.0)
    swaying = Settling("page_a", unknown_s=2.0)
    assert [swaying.see(None, False, False, True, now=t / 2) for t in range(6)] == [False] * 4 + [True] * 2
    loading = Settling("page_a", unknown_s=2.0)
    assert not any(loading.see(None, False, True, t == 0, now=t) for t in range(10))  # a loading screen is waited
    assert not loading.see(None, False, False, False, now=10.0)  # unknown from here: counted from now
    assert loading.see(None, False, False, False, now=12.0)


def test_the_source_page_seen_again_after_a_loading_screen_ends_the_wait():
    """Generated game 1 under chaos, with its explorer's draft (15 s allowances for links through loading screens):
    START on the title showed a loading screen, the game crashed and came back to the title, and the goto looked at
    the title for the rest of the 15 s. The source again after a passing screen is where the hop ended; the source
    before anything passed (a tap still being drawn, a dropped tap) is waited out as before."""
    bounced = Settling("page_title")
    assert not bounced.see(None, False, True, True, now=0.3)  # the loading screen
    assert bounced.see("page_title", False, False, True, now=1.2)
    dropped = Settling("page_title")
    assert not dropped.see("page_title", False, False, False, now=0.1)
    assert not dropped.see("page_title", False, False, True, now=0.5)  # a press drawn on the same page
    assert not dropped.see("page_title", False, False, False, now=5.0)


def test_a_hop_whose_source_page_never_left_is_over_after_respond_s_not_the_links_allowance():
    """A dropped tap on a page that sways: frames change, every look names the source. The hop is done after
    RESPOND_S (then taken again), not after a draft's 15 s allowance; a look of anything else first keeps the wait."""
    from engine.core.stuck import RESPOND_S

    dropped = Settling("page_main")
    assert not any(dropped.see("page_main", False, False, True, now=t / 10) for t in range(int(RESPOND_S * 10)))
    assert dropped.see("page_main", False, False, True, now=RESPOND_S)
    went = Settling("page_main")
    assert not went.see(None, False, False, True, now=0.0)  # something else drawn: the allowance goes on
    assert not went.see("page_main", False, False, False, now=RESPOND_S + 1)


def test_a_page_other_than_the_expected_one_ends_the_wait_only_when_two_looks_in_a_row_name_it():
    """Generated game 12's draft: a tap into one tab faded in, and the look half-way through the fade named the
    sister tab, the goto's target: the goto was verified on the wrong tab (4 false successes in 200). The expected
    page ends the wait from one look; another page, only when the next look names it too (a real wrong landing
    costs one look more)."""
    fade = Settling("page_hall", expected="page_depot")
    assert not fade.see("page_coral", False, False, True, now=0.3)  # the blend, named the sister
    assert fade.see("page_depot", False, False, True, now=0.6)      # the fade done: where the hop went
    elsewhere = Settling("page_hall", expected="page_depot")
    assert not elsewhere.see("page_coral", False, False, True, now=0.3)
    assert elsewhere.see("page_coral", False, False, False, now=0.6)  # it stays: the hop landed there
    assert Settling("page_hall").see("page_coral", False, False, True, now=0.3)  # no expectation: as before
