"""Store-wide settings: `setdefault` keeps the first value written, however many processes race
to set it (the deployment's Redis signing key is made this way)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from plait.store import Store


def test_the_first_value_set_wins_and_every_caller_gets_it(store: Store, open_store: Callable[[], Store]) -> None:
    others = [open_store() for _ in range(4)]  # other processes' connections to the same database
    with ThreadPoolExecutor(len(others)) as pool:
        got = list(pool.map(lambda pair: pair[0].settings.setdefault("k", pair[1]), zip(others, "abcd", strict=True)))
    assert len(set(got)) == 1
    assert store.settings.get("k") == got[0]
    assert store.settings.setdefault("k", "later") == got[0]
    store.settings.set("k", "replaced")  # `set` still replaces
    assert others[0].settings.setdefault("k", "x") == "replaced"
