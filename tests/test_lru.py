"""fabric.lru.BytesLRU: the store the evaluation keeps a cabling's cuts and tree placements in across builds."""

from __future__ import annotations

import numpy as np

from fabric.lru import BytesLRU


def test_least_recently_used_go_first_past_the_byte_budget():
    lru = BytesLRU(3_000, lambda a: a.nbytes)
    a, b, c = np.zeros(125), np.ones(125), np.full(125, 2.0)        # 1,000 bytes each
    lru.put("a", a)
    lru.put("b", b)
    lru.put("c", c)
    assert len(lru) == 3 and lru.bytes == 3_000
    assert lru.get("a") is a                                          # a is now the most recently used
    lru.put("d", np.zeros(250))                                       # 2,000 bytes: b then c must go
    assert lru.get("b") is None and lru.get("c") is None
    assert lru.get("a") is a and lru.bytes == 3_000 and len(lru) == 2


def test_a_value_past_the_budget_is_kept_alone_and_a_key_replaced_counts_once():
    lru = BytesLRU(100, lambda a: a.nbytes)
    big = np.zeros(1_000)
    lru.put("x", np.zeros(5))
    lru.put("big", big)
    assert lru.get("big") is big and lru.get("x") is None and lru.bytes == 8_000
    lru.put("big", np.zeros(10))
    assert len(lru) == 1 and lru.bytes == 80
    lru.clear()
    assert len(lru) == 0 and lru.bytes == 0 and lru.get("big") is None
