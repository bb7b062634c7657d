"""`client.promote_graph` and `client.graph_promotions`: what `plait graphs promote` and the
promotion part of `plait graphs show` do, from Python, blocking and async (SQLite and
PostgreSQL), refusals worded for Python; `client.run` then runs the promoted version unless
`version` names another."""

from __future__ import annotations

import asyncio

import pytest

from plait.client import AsyncClient, Client
from plait.runs.promote import GateRefused, PromotionError
from plait.store import Store
from tests.runs.promote_scenario import eval_set, evaluated, three_versions


def test_a_version_is_promoted_through_the_gate_and_runs_follow_it(store: Store, db_url: str) -> None:
    graph_id = three_versions(store)
    fixes = eval_set(store, graph_id)
    evaluated(store, fixes, 2, "inconclusive")
    with Client(db_url) as client:
        with pytest.raises(GateRefused) as refused:
            client.promote_graph("labels", 2, gate="fixes")
        hint = str(refused.value.hint)
        assert 'client.evals.run("labels", set="fixes@1", version=2)' in hint
        assert "pass force=True and a note= to promote anyway" in hint
        with pytest.raises(PromotionError, match="needs a note") as no_note:
            client.promote_graph("labels", 2, force=True)
        assert no_note.value.hint == "pass note= with force=True"
        evaluated(store, fixes, 2, "pass")
        made = client.promote_graph("labels", 2, gate="fixes")
        assert (made.version, made.forced, made.promoted_by) == (2, False, "python")
        assert client.run("labels").output == {"label": "two"}
        assert client.run("labels", version=3).output == {"label": "three"}
        assert client.wait(client.start("labels", version=1)).output == {"label": "one"}

    async def go() -> None:
        async with AsyncClient(db_url) as client:
            forced = await client.promote_graph("labels", 3, force=True, note="three is what the team reviewed")
            assert (forced.previous_version, forced.forced) == (2, True)
            shown = await client.graph_promotions("labels")
            assert shown.promoted_version == 3
            assert [(p.promotion.version, p.gate) for p in shown.history] == [(3, None), (2, "fixes@1")]
            assert (await client.run("labels")).output == {"label": "three"}

    asyncio.run(go())
