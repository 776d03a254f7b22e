"""Exploring a game nobody has described: play it through screenshots, taps, swipes, the back key and restarts,
and write a draft page graph (engine.explore.draft) an author reviews instead of starting from an empty folder."""
