"""A tiered drawing of a built fabric that stays small whatever the size of the cluster.

Rows bottom to top: NIC groups (the NICs cabled to one leaf), leaves (or dragonfly routers), spines, cores; planes
side by side. Every switch is drawn while a row has at most ``max_per_row`` (:data:`MAX_PER_ROW`, 48; shared
by the planes, at least 8 each) of them; a larger row is drawn as at most 24 boxes (over the planes, at least 4 a plane;
:data:`MAX_LABELLED_PER_ROW`), each standing for a contiguous range of switches and
labelled with how many it stands for, and the row's axis label gives the count and the boxes ("leaves: 4,096 in 48
boxes"), so a box never silently stands for several switches. Links between two boxes are drawn as one line whose
width grows with the number of cables it stands for. A 3-tier fabric of several pods draws its leaves and spines by pod (one box per pod and
plane, or per range of pods when there are more than ``max_per_row``), so a multi-plane 131,072-GPU fabric reads as
planes x pods. So a 131,072-GPU fabric is a few hundred shapes, never 100k nodes. Link groups that the
evaluation reported as hot are coloured by their busiest link's utilization in the p99 step.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from fabric.topology.fabric import LINK_KINDS, NIC, SWITCH

__all__ = ["TopologyView", "topology_view", "topology_figure", "row_label", "HOT_KIND_TO_LINK_KIND", "MAX_PER_ROW",
           "MAX_LABELLED_PER_ROW"]

#: Switches of one tier and plane drawn one box each; a larger row is drawn as this many boxes (each labelled with
#: its count). 48 boxes fit the Design page's topology column at 1,280 px (squares shrink from 16 to 8 px).
MAX_PER_ROW = 48
#: A row whose boxes stand for several switches each (labelled with their counts) has at most this many boxes (over
#: all planes, at least 4 a plane), so the count labels never run into each other (docs/dashboard.md)
MAX_LABELLED_PER_ROW = 24

#: Link group names of ``Evaluation.hot_links`` -> the cable kind they run on.
HOT_KIND_TO_LINK_KIND = {
    "leaf uplinks": "leaf-spine", "leaf downlinks": "leaf-spine",
    "pod core uplinks": "spine-core", "pod core downlinks": "spine-core",
    "global links": "router-global", "router local uplinks": "router-local",
}
_PLURAL = {"leaf": "leaves", "spine": "spines", "core": "cores", "router": "routers"}
_NETWORK_KINDS = ("nic-leaf", "leaf-spine", "spine-core", "router-local", "router-global")
_ROW_COLORS = {"nic": "#9e9e9e", "leaf": "#1f5fbf", "router": "#1f5fbf", "spine": "#d95f02", "core": "#7570b3"}
_UTIL_BINS = ((0.0, "#b0b0b0", "links"), (1e-9, "#fdae61", "hot links, busiest < 25 %"),
              (0.25, "#f46d43", "hot links, busiest 25-50 %"), (0.5, "#d73027", "hot links, busiest 50-75 %"),
              (0.75, "#7f0000", "hot links, busiest ≥ 75 %"))


@dataclass(frozen=True)
class TopologyView:
    """Display nodes and aggregated edges. ``nodes``: dicts with x, y, row, label, members, hover; ``edges``: dicts
    with a, b (node indices), kind, links (cables drawn as this line), utilization (or None)."""

    nodes: list
    edges: list
    rows: list
    title: str
    aggregated: bool
    #: a design of regions: ``{"name", "x0", "x1", "top", "text"}`` per region and plane (its leaves' span, the
    #: highest row it owns), drawn as a shaded band under its switches
    regions: list = ()


def _buckets(n: int, max_per_row: int) -> np.ndarray:
    """Bucket index of each of ``n`` items when at most ``max_per_row`` buckets are drawn (contiguous ranges)."""
    if n <= max_per_row:
        return np.arange(n)
    return (np.arange(n) * max_per_row) // n


def _range_label(name: str, lo: int, hi: int) -> str:
    return f"{name} {lo}" if lo == hi else f"{name} {lo}-{hi}"


def topology_view(fabric, hot_links: Sequence[Mapping] = (), *, max_per_row: int = MAX_PER_ROW) -> TopologyView:
    """The aggregated drawing data of ``fabric`` with ``hot_links`` (``Evaluation.hot_links``) coloured."""
    kinds = fabric.node_kind
    n_nodes = kinds.shape[0]
    disp = np.full(n_nodes, -1, dtype=np.int64)
    nodes: list[dict] = []
    rows: list[str] = []
    planes = max(1, fabric.planes)
    max_per_row = max(8, max_per_row // planes)        # planes share the row's width
    labelled = min(max_per_row, max(4, MAX_LABELLED_PER_ROW // planes))
    sw_ids = np.flatnonzero(kinds == SWITCH)
    tiers = sorted(set(fabric.node_tier[sw_ids].tolist()))
    tier_name = {t: ("router" if fabric.family == "dragonfly" and t == 0 else fabric.tier_names[t]) for t in tiers}
    aggregated = False
    s = fabric.structure
    pods = int(s.get("pods", 1) or 1) if fabric.tiers == 3 and fabric.family != "dragonfly" else 1
    per_pod = {0: int(s.get("leaves_per_pod") or 0), 1: int(s.get("spines_per_pod") or 0)}
    if fabric.family == "rail_only":
        pods = 1                            # rail-only: per-rail Clos networks, drawn by range
    regions = s.get("regions") or []
    if regions:
        pods = 1                            # a design of regions: leaves (and a shared core's spines) by region
    # switches: one row per tier, planes side by side
    for ti, t in enumerate(tiers):
        name = tier_name[t]
        rows.append(name)
        for p in range(planes):
            ids = sw_ids[(fabric.node_tier[sw_ids] == t) & (fabric.node_plane[sw_ids] == p)]
            if ids.size == 0:
                continue
            by_pod = pods > 1 and per_pod.get(t, 0) > 0
            reg = _region_of(regions, t, ids.size)
            if reg is not None:
                cap = max(1, max_per_row // len(regions))
                b = np.zeros(ids.size, np.int64)
                off = 0
                for r in range(len(regions)):
                    m = np.flatnonzero(reg == r)
                    if m.size:
                        b[m] = off + _buckets(m.size, cap)
                        off += int(b[m].max()) - off + 1
                aggregated |= bool((np.bincount(b) > 1).any())
            elif by_pod:
                pod = np.arange(ids.size) // per_pod[t]
                b = pod if pods <= labelled else (pod * labelled) // pods
                aggregated = True
            else:
                b = _buckets(ids.size, max_per_row if ids.size <= max_per_row else labelled)
                aggregated |= ids.size > max_per_row
            nb = int(b.max()) + 1
            for k in range(nb):
                members = np.flatnonzero(b == k)
                lo, hi = int(members[0]), int(members[-1])
                plane_txt = f" plane {p}" if planes > 1 else ""
                if reg is not None:
                    rr = regions[int(reg[members[0]])]
                    first = rr["leaf_range" if t == 0 else "spine_range"][0]
                    label = f"{rr['name']}: " + _range_label(name, lo - first, hi - first) + plane_txt
                elif by_pod:
                    plo, phi = int(pod[members[0]]), int(pod[members[-1]])
                    label = (f"pod {plo}" if plo == phi else f"pods {plo}-{phi}") + f" {_PLURAL.get(name, name)}" \
                        + plane_txt
                else:
                    label = _range_label(name, lo, hi) + plane_txt
                x = p + (k + 0.5) / nb
                disp[ids[members]] = len(nodes)
                nodes.append({"x": x, "y": ti + 1, "row": name, "label": label, "members": int(members.size),
                              "plane": p, "hover": f"{label}<br>{members.size:,} switch(es)"})
    # NIC groups: the NICs whose first port is cabled to one displayed switch
    nic_ids = np.flatnonzero(kinds == NIC)
    if nic_ids.size and fabric.nic_ports.size:
        first = fabric.nic_ports[nic_ids - fabric.nic_base, 0]
        parent = disp[first]
        rows.insert(0, "nic")
        for d in np.unique(parent[parent >= 0]):
            sel = nic_ids[parent == d]
            px = nodes[int(d)]["x"]
            disp[sel] = len(nodes)
            nodes.append({"x": px, "y": 0, "row": "nic", "label": f"{sel.size:,} NICs", "members": int(sel.size),
                          "plane": nodes[int(d)]["plane"],
                          "hover": f"{sel.size:,} NICs cabled to {nodes[int(d)]['label']}"})
    # hot link kinds -> busiest utilization in the p99 step
    util: dict[str, float] = {}
    busiest: dict[str, str] = {}
    for h in hot_links:
        lk = HOT_KIND_TO_LINK_KIND.get(str(h.get("links")))
        if lk is None:
            continue
        u = float(h.get("p99_sample_utilization", 0.0))
        if u >= util.get(lk, -1.0):
            util[lk] = u
            busiest[lk] = f"{h.get('links')} of {h.get('example')}"
    # aggregated edges
    edges: list[dict] = []
    keep = np.isin(fabric.link_kind, [LINK_KINDS.index(k) for k in _NETWORK_KINDS])
    a, b, lk = disp[fabric.link_a[keep]], disp[fabric.link_b[keep]], fabric.link_kind[keep]
    ok = (a >= 0) & (b >= 0) & (a != b)
    a, b, lk = a[ok], b[ok], lk[ok]
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    if lo.size:
        key = (lo * (len(nodes) + 1) + hi) * len(LINK_KINDS) + lk
        uniq, counts = np.unique(key, return_counts=True)
        for k, c in zip(uniq.tolist(), counts.tolist()):
            kind = LINK_KINDS[k % len(LINK_KINDS)]
            pair = k // len(LINK_KINDS)
            ea, eb = divmod(pair, len(nodes) + 1)
            edges.append({"a": int(ea), "b": int(eb), "kind": kind, "links": int(c), "utilization": util.get(kind),
                          "busiest": busiest.get(kind, "")})
    counts = fabric.switch_counts()
    title = ", ".join(f"{v:,} {k}" for k, v in counts.items()) + f" switches; {fabric.n_nics:,} NICs"
    return TopologyView(nodes=nodes, edges=edges, rows=rows, title=title, aggregated=aggregated,
                        regions=_region_bands(fabric, nodes, regions))


_FAMILY_WORDS = {"clos": "Clos", "rail_optimized": "rail-optimized"}


def _region_bands(fabric, nodes: list, regions: list) -> list:
    """The band of each region and plane: the x span of its leaf boxes, up to its spines when it owns them."""
    out = []
    specs = getattr(fabric.design, "regions", None) or ()
    for i, r in enumerate(regions):
        spec = specs[i] if i < len(specs) else None
        ratio = f"{r['oversubscription'][0]:g}:1" + (f", {r['oversubscription'][1]:g}:1 up" if r["spines"] and
                                                     r["oversubscription"][1] != 1.0 else "")
        jobs = f" · {', '.join(spec.jobs)}" if spec is not None and spec.jobs else ""
        for p in range(max(1, fabric.planes)):
            xs = [n["x"] for n in nodes if n["row"] in ("leaf", "router") and n["plane"] == p
                  and n["label"].startswith(f"{r['name']}: ")]
            if not xs:
                continue
            own_spines = any(n["row"] == "spine" and n["plane"] == p and n["label"].startswith(f"{r['name']}: ")
                             for n in nodes)
            out.append({"name": r["name"], "x0": min(xs), "x1": max(xs), "top": 2 if own_spines else 1,
                        "text": f"{r['name']}: {_FAMILY_WORDS.get(r['family'], r['family'])} {ratio}<br>"
                                f"{r['gpus']:,} GPUs{jobs}"})
    return out


def _region_of(regions, tier: int, n: int) -> np.ndarray | None:
    """Region index of each of a plane's ``n`` switches of ``tier`` (leaves; a shared core's region spines), or
    None when the row is shared (spines joining regions, cores) or the design has no regions."""
    key = {0: "leaf_range", 1: "spine_range"}.get(tier)
    if not regions or key is None or not any(r[key][1] > r[key][0] for r in regions):
        return None
    out = np.full(n, -1, np.int64)
    for i, r in enumerate(regions):
        lo, hi = r[key]
        out[lo:hi] = i
    return out if (out >= 0).all() else None


def row_label(view: TopologyView, row: str) -> str:
    """The axis label of a row: ``leaves: 22`` when every switch is drawn, ``leaves: 4,096 in 48 boxes`` when boxes
    stand for ranges of switches, ``NICs: 1,024 in 22 groups`` (a NIC circle is the NICs of one drawn leaf)."""
    plural = {"nic": "NICs", "leaf": "leaves", "spine": "spines", "core": "cores", "router": "routers"}
    ns = [n for n in view.nodes if n["row"] == row]
    total = sum(n["members"] for n in ns)
    name = plural.get(row, row)
    if row == "nic":
        return f"{name}: {total:,} in {len(ns):,} group{'s' if len(ns) != 1 else ''}"
    if total == len(ns):
        return f"{name}: {total:,}"
    return f"{name}: {total:,} in {len(ns):,} boxes"


def _bin(u: float | None) -> int:
    if u is None:
        return 0
    idx = 1
    for i, (lo, _, _) in enumerate(_UTIL_BINS[1:], start=1):
        if u >= lo:
            idx = i
    return idx


def topology_figure(view: TopologyView, *, height: int = 420) -> go.Figure:
    """The plotly figure of a :class:`TopologyView`: tiers bottom to top, links coloured by p99 utilization."""
    from fabric.ui_support.charts import style

    fig = go.Figure()
    max_links = max([e["links"] for e in view.edges] + [1])
    by_style: dict[tuple[int, int], list] = {}
    for e in view.edges:
        width = 1 + round(3 * np.log1p(e["links"]) / np.log1p(max_links)) if max_links > 1 else 1
        by_style.setdefault((_bin(e["utilization"]), int(width)), []).append(e)
    shown_bins: set[int] = set()
    for (bi, width), es in sorted(by_style.items()):
        xs: list = []
        ys: list = []
        for e in es:
            na, nb = view.nodes[e["a"]], view.nodes[e["b"]]
            if na["y"] == nb["y"]:  # same row (dragonfly): an arc above the row
                t = np.linspace(0, 1, 9)
                xs += list(na["x"] + (nb["x"] - na["x"]) * t) + [None]
                ys += list(na["y"] + 0.35 * np.sin(np.pi * t)) + [None]
            else:
                xs += [na["x"], nb["x"], None]
                ys += [na["y"], nb["y"], None]
        _, color, label = _UTIL_BINS[bi]
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line=dict(color=color, width=width),
                                 opacity=0.55 if bi == 0 else 0.9, hoverinfo="skip",
                                 name=label, legendgroup=f"u{bi}",
                                 showlegend=bi not in shown_bins))
        shown_bins.add(bi)
    # edge hover points at midpoints (one per aggregated line)
    mids = [e for e in view.edges]
    if mids:
        fig.add_trace(go.Scatter(
            x=[(view.nodes[e["a"]]["x"] + view.nodes[e["b"]]["x"]) / 2 for e in mids],
            y=[(view.nodes[e["a"]]["y"] + view.nodes[e["b"]]["y"]) / 2
               + (0.26 if view.nodes[e["a"]]["y"] == view.nodes[e["b"]]["y"] else 0) for e in mids],
            mode="markers", marker=dict(size=6, color="rgba(0,0,0,0)"), showlegend=False,
            hovertext=[f"{e['links']:,} {e['kind']} link(s): {view.nodes[e['a']]['label']} – "
                       f"{view.nodes[e['b']]['label']}"
                       + (f"<br>busiest {e['busiest']}: {e['utilization']:.0%} in the p99 step"
                          if e["utilization"] is not None else "") for e in mids],
            hoverinfo="text"))
    for row in dict.fromkeys(n["row"] for n in view.nodes):
        ns = [n for n in view.nodes if n["row"] == row]
        size = float(np.clip(400 / len(ns), 8, 16 if row != "nic" else 11))
        boxes = row != "nic" and any(n["members"] > 1 for n in ns)       # a box standing for several switches
        fig.add_trace(go.Scatter(
            x=[n["x"] for n in ns], y=[n["y"] for n in ns], mode="markers+text" if boxes else "markers",
            text=[f"{n['members']:,}" if n["members"] > 1 else "" for n in ns] if boxes else None,
            textposition="top center", textfont=dict(size=9, color=_ROW_COLORS.get(row, "#333")),
            marker=dict(symbol="square" if row != "nic" else "circle", size=size,
                        color=_ROW_COLORS.get(row, "#333"), line=dict(color="white", width=1)),
            name=(f"{row} switches" + (" (a box: the number above it)" if boxes else "")) if row != "nic"
            else "NIC groups", hovertext=[n["hover"] for n in ns], hoverinfo="text"))
    n_rows = max([n["y"] for n in view.nodes] + [0]) + 1
    planes = max([n["plane"] for n in view.nodes] + [0]) + 1
    tick_text = [row_label(view, r) for r in view.rows]
    shades = ("rgba(231,41,138,0.08)", "rgba(27,158,119,0.10)", "rgba(117,112,179,0.10)", "rgba(230,171,2,0.10)")
    letters = sorted({b["name"] for b in view.regions})
    for b in view.regions:
        pad = 0.4 / max(1, len([n for n in view.nodes if n["row"] == "leaf"]))
        fig.add_shape(type="rect", x0=b["x0"] - pad - 0.004, x1=b["x1"] + pad + 0.004, y0=-0.35, y1=b["top"] + 0.3,
                      fillcolor=shades[letters.index(b["name"]) % len(shades)], line=dict(width=0), layer="below")
        fig.add_annotation(x=(b["x0"] + b["x1"]) / 2, y=-0.4, text=b["text"], showarrow=False, yanchor="top",
                           font=dict(size=10, color="#444"))
    bottom = -1.3 if view.regions else -0.5
    fig.update_yaxes(tickvals=list(range(len(view.rows))), ticktext=tick_text, range=[bottom, n_rows - 0.3],
                     showgrid=False, zeroline=False, title_text="")
    fig.update_xaxes(showticklabels=False, showgrid=False, zeroline=False, range=[-0.02, planes + 0.02],
                     title_text=" | ".join(f"plane {p}" for p in range(planes)) if planes > 1 else "")
    style(fig, height=height, legend_below=True)
    fig.update_xaxes(showline=False, ticks="")
    fig.update_yaxes(showline=False, ticks="")
    return fig
