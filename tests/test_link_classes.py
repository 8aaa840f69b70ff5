"""Link classes: members (link groups) with equal balls, links, slow links and background share one class."""

from __future__ import annotations

import numpy as np
import pytest

from fabric.evaluate.link_classes import _classes


@pytest.mark.parametrize("links", ["equal", "varying"])
@pytest.mark.parametrize("slow", ["equal", "varying"])
def test_classes_group_members_by_their_load_shape(links, slow):
    """Every class is one distinct (balls, links, slow links, background %) row, in lexicographic order, holding the
    members with that row in their order: checked against numpy's own row grouping, with the link counts equal
    (a tier's uplink groups), or a few short of a failed link (the grouping by one number), and slow links too."""
    rng = np.random.default_rng(3)
    m = 20_000
    keys = np.arange(100, 100 + m)
    k = rng.integers(1, 40, m)
    n = np.full(m, 8) if links == "equal" else np.where(rng.random(m) < 0.05, rng.integers(0, 8, m), 8)
    sl = np.zeros(m, np.int64) if slow == "equal" else rng.integers(0, 2, m)
    bg = np.full(m, 0.3)
    total = rng.uniform(1.0, 2.0, m)
    ball = total / k
    got = _classes("leaf uplinks", keys, k, ball, n, sl, bg, total)
    rows, inv = np.unique(np.stack([k, n, sl, np.full(m, 30)], axis=1), axis=0, return_inverse=True)
    inv = inv.ravel()
    assert len(got) == len(rows)
    for i, (c, (kk, nn, ss, bp)) in enumerate(zip(got, rows)):
        at = np.flatnonzero(inv == i)
        assert (c.k, c.n, c.slow, c.bg) == (kk, nn, ss, bp / 100)
        assert c.members == at.size and np.array_equal(c.member_ids, keys[at])
        assert c.ball == ball[at].max()
        assert np.array_equal(c.member_loads, total[at] / max(nn, 1))
