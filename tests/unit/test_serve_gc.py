"""The gateway process hides what startup built from the cyclic collector, and collects young
objects less often (serve.freeze_startup_objects; why: docs/performance.md)."""

from __future__ import annotations

import asyncio
import gc

from aiohttp import web

from gateway.serve import GC_GEN0_THRESHOLD, freeze_startup_objects


def test_startup_objects_are_frozen_and_the_young_generation_is_larger() -> None:
    before = gc.get_threshold()
    big_table = [{"entry": i} for i in range(1000)]  # stands in for the policy's lexicons
    try:
        asyncio.run(freeze_startup_objects(web.Application()))
        assert gc.get_freeze_count() >= len(big_table)
        assert gc.get_threshold() == (GC_GEN0_THRESHOLD, before[1], before[2])
        # A full collection no longer walks them: it sees far fewer objects than were frozen.
        assert len(gc.get_objects()) < gc.get_freeze_count()
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
