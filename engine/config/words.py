"""What a button's words say it does: spend or commit (never tapped by a search), or close (tried first).

The one place of the built-in lists, in the languages of the games' servers (en, cn, jp, tw, kr); a graph adds its
own spending words with ``spending_words`` (engine.config.schema.GraphFile), never removes one. Latin words match
whole words, case-blind ("use" in "Use item", not in "pause"); words in other scripts match anywhere in the text.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Iterable

SPENDING = (
    "buy", "purchase", "pay", "recharge", "top up", "top-up", "exchange", "use", "spend", "redeem", "confirm purchase",
    "购买", "购入", "支付", "充值", "兑换", "使用", "花费",  # cn
    "購入", "買う", "支払", "課金", "チャージ", "交換", "使用",  # jp
    "購買", "儲值", "兌換", "花費",  # tw
    "구매", "결제", "충전", "교환", "사용",  # kr
)
"""Words on a button that spends or commits something (a search never taps it)."""

CLOSING = (
    "close", "cancel", "later", "skip", "back", "not now", "no thanks", "x", "×", "✕", "✖",
    "关闭", "取消", "稍后", "跳过", "返回",  # cn
    "閉じる", "キャンセル", "後で", "スキップ", "戻る",  # jp
    "關閉", "稍後", "跳過",  # tw
    "닫기", "취소", "나중에", "건너뛰기", "뒤로",  # kr
)
"""Words on a button that closes a dialog without committing (a search tries it first)."""

ACKNOWLEDGING = (
    "ok", "okay", "confirm", "continue", "got it", "yes", "accept", "done", "next",
    "确定", "确认", "继续", "好的", "知道了",  # cn
    "確認", "はい", "次へ", "続ける", "了解",  # jp
    "確定", "繼續", "知道了",  # tw
    "확인", "계속", "예", "다음",  # kr
)
"""Words on a button that acknowledges a notice (OK, Confirm): tried after the closers, before the other regions, on
a dialog where nothing spends (engine.observe.guard)."""


def _norm(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold().strip()


def says(text: str, words: Iterable[str]) -> bool:
    """Whether `text` (read from a button) contains one of `words`."""
    text = _norm(text)
    if not text:
        return False
    for word in words:
        word = _norm(word)
        if not word:
            continue
        if word.isascii():
            if re.search(rf"(?<![a-z0-9]){re.escape(word)}(?![a-z0-9])", text):
                return True
        elif word in text:
            return True
    return False


def spending(extra: Iterable[str] | None = None) -> tuple[str, ...]:
    """The built-in spending words and a graph's own (`extra`)."""
    return SPENDING + tuple(w for w in (extra or ()) if w)
