"""Values derived once per cabling plan (name tables, rack contents), kept as long as the plan is."""

from __future__ import annotations

import weakref

__all__ = ["per_plan"]

_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def per_plan(plan, make):
    """``make(plan)``, computed once per plan object and kind of value (``make`` is the key)."""
    try:
        got = _CACHE.setdefault(plan, {})
    except TypeError:               # not weakly referenceable: no cache
        return make(plan)
    if make not in got:
        got[make] = make(plan)
    return got[make]
