"""Where things go on a generated game's screens, at its resolution: the slots of a page (top band, title, art,
tab bar, a grid of buttons, the bottom band) and of a popup's panel.

Every page uses the same slots (a game's pages share one layout), so nothing but what a page shows tells it from
another: its title (or the card that names what it shows, when the game draws no titles), its selected tab, its
buttons. The art, the tickers and the particles have slots of their own that no signature's area touches: what moves
never changes what a template or OCR sees.
"""

from __future__ import annotations

from dataclasses import dataclass

Area = tuple[int, int, int, int]


@dataclass(frozen=True)
class Layout:
    width: int
    height: int
    title_align: str = "centre"
    """left, centre or right of the top band."""

    @property
    def portrait(self) -> bool:
        return self.height > self.width

    def px(self, value: float) -> int:
        return int(round(value * min(self.width, self.height) / 720))

    # ---- the top band

    @property
    def band(self) -> int:
        return self.px(84)

    @property
    def back(self) -> Area:
        return (self.px(16), self.px(14), self.px(136), self.px(70))

    @property
    def home(self) -> Area:
        return (self.width - self.px(84), self.px(12), self.width - self.px(16), self.px(72))

    @property
    def icon_exit(self) -> Area:
        """The small icon that is the only way out of some pages: 40 px at 720 p, top right."""
        return (self.width - self.px(60), self.px(22), self.width - self.px(20), self.px(62))

    @property
    def title(self) -> Area:
        w, h, y = min(self.px(380), self.width - self.px(300)), self.px(52), self.px(16)
        x = {"left": self.px(150), "right": self.width - w - self.px(100)}.get(self.title_align,
                                                                              (self.width - w) // 2)
        return (x, y, x + w, y + h)

    # ---- the body

    @property
    def card(self) -> Area:
        if self.portrait:
            return (int(0.05 * self.width), self.band + self.px(16), int(0.95 * self.width), self.band + self.px(80))
        return (int(0.03 * self.width), self.band + self.px(16), int(0.40 * self.width), self.band + self.px(76))

    @property
    def art(self) -> Area:
        top = self.card[3] + self.px(16)
        if self.portrait:
            return (int(0.12 * self.width), top, int(0.88 * self.width), top + int(0.22 * self.height))
        return (int(0.05 * self.width), top, int(0.38 * self.width), self.height - self.px(84))

    @property
    def tabs(self) -> Area:
        if self.portrait:
            top = self.art[3] + self.px(12)
            return (int(0.04 * self.width), top, int(0.96 * self.width), top + self.px(56))
        return (int(0.44 * self.width), self.band + self.px(16), int(0.97 * self.width), self.band + self.px(72))

    def tab(self, index: int, count: int) -> Area:
        x1, y1, x2, y2 = self.tabs
        gap = self.px(8)
        w = (x2 - x1 - gap * (count - 1)) // count
        return (x1 + index * (w + gap), y1, x1 + index * (w + gap) + w, y2)

    def grid(self, count: int, columns: int, tabs: bool) -> list[Area]:
        """`count` button slots, row by row in `columns` columns (fewer rows than needed: ValueError)."""
        if self.portrait:
            x1, x2 = int(0.06 * self.width), int(0.94 * self.width)
            top = (self.tabs[3] if tabs else self.art[3]) + self.px(16)
        else:
            x1, x2 = int(0.44 * self.width), int(0.97 * self.width)
            top = (self.tabs[3] if tabs else self.band) + self.px(16)
        bottom, h, gap = self.height - self.px(84), self.px(64), self.px(14)
        w = (x2 - x1 - gap * (columns - 1)) // columns
        rows = (bottom - top + gap) // (h + gap)
        if count > rows * columns:
            raise ValueError(f"{count} buttons do not fit {rows} rows of {columns}")
        return [(x1 + (i % columns) * (w + gap), top + (i // columns) * (h + gap),
                 x1 + (i % columns) * (w + gap) + w, top + (i // columns) * (h + gap) + h) for i in range(count)]

    # ---- the bottom band: what ticks

    @property
    def hud(self) -> Area:
        return (self.px(16), self.height - self.px(62), self.px(236), self.height - self.px(18))

    @property
    def timer(self) -> Area:
        return (self.width - self.px(236), self.height - self.px(62), self.width - self.px(16),
                self.height - self.px(18))

    # ---- the title screen and the loading screen

    @property
    def logo(self) -> Area:
        return (int(0.12 * self.width), int(0.14 * self.height), int(0.88 * self.width), int(0.30 * self.height))

    @property
    def logo_art(self) -> Area:
        return (int(0.3 * self.width), int(0.34 * self.height), int(0.7 * self.width), int(0.64 * self.height))

    @property
    def start(self) -> Area:
        return (int(0.25 * self.width), int(0.72 * self.height), int(0.75 * self.width),
                int(0.72 * self.height) + self.px(56))

    @property
    def loading_caption(self) -> Area:
        return (self.width - self.px(380), self.height - self.px(130), self.width - self.px(40),
                self.height - self.px(80))

    @property
    def loading_bar(self) -> Area:
        return (int(0.15 * self.width), self.height - self.px(56), int(0.85 * self.width), self.height - self.px(36))

    # ---- popups

    @property
    def panel(self) -> Area:
        w = int(0.86 * self.width) if self.portrait else min(int(0.62 * self.width), self.px(820))
        h = min(int(0.5 * self.height), self.px(440))
        x, y = (self.width - w) // 2, (self.height - h) // 2
        return (x, y, x + w, y + h)

    @property
    def popup_title(self) -> Area:
        x1, y1, x2, _ = self.panel
        return (x1 + self.px(72), y1 + self.px(18), x2 - self.px(72), y1 + self.px(74))

    def cross(self, corner: str, spot: tuple[float, float] = (0.5, 0.5)) -> Area:
        """The close cross at a corner of the panel, or (`panel`) at `spot` (0..1 each way) on its body."""
        x1, y1, x2, y2 = self.panel
        s, m = self.px(48), self.px(10)
        if corner == "panel":
            x = x1 + m + int(spot[0] * (x2 - x1 - s - 2 * m))
            y = self.popup_title[3] + m + int(spot[1] * (y2 - self.popup_title[3] - s - 2 * m - self.px(96)))
            return (x, y, x + s, y + s)
        x = x1 + m if corner[1] == "l" else x2 - m - s
        y = y1 + m if corner[0] == "t" else y2 - m - s
        return (x, y, x + s, y + s)

    @property
    def ok(self) -> Area:
        x1, _, x2, y2 = self.panel
        cx = (x1 + x2) // 2
        return (cx - self.px(120), y2 - self.px(88), cx + self.px(120), y2 - self.px(28))

    @property
    def tap_hint(self) -> Area:
        x1, _, x2, y2 = self.panel
        cx = (x1 + x2) // 2
        return (cx - self.px(210), y2 - self.px(84), cx + self.px(210), y2 - self.px(38))
