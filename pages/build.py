"""Fabric & BOM: build a reference design (any preset at another size) and show, and export, its bill of
materials."""

import pandas as pd
import streamlit as st

from pages import _common as C

from fabric.reference.presets import PRESETS, preset_design
from fabric.reference.rules import scalable_unit_note
from fabric.errors import FabricError
from fabric.review.figures import figure_text
from fabric.ui_support import charts
from fabric.ui_support.racks_view import power_text

C.require_entry()
ss = st.session_state


@st.cache_data(show_spinner=False, max_entries=64)
def _unit_note(design_json: str, cat_key: str, _catalog) -> str:
    import json

    from fabric.design import design_from_dict

    return scalable_unit_note(design_from_dict(json.loads(design_json)), _catalog)


def _design(preset: str, gpus: int):
    """The preset's design at ``gpus`` and its bill of materials (the session's catalog), or FabricError."""
    design = preset_design(preset, gpus)
    return design, C.bom_dict(design)


def _start_gpus(preset: str) -> int:
    """The GPU count a reference design opens at: the session's cluster (the Constraints page) when the design
    builds at it, else the design's own size (a note on the page says why)."""
    gpus = C.constraints().gpus
    try:
        _design(preset, gpus)
    except FabricError as err:
        ss["build_size_note"] = (f"{PRESETS[preset].title.split(':')[0].split(' (')[0]} cannot be built at the session's {gpus:,} "
                                 f"GPUs ({C.public_message(err)}); shown at its own size, "
                                 f"{PRESETS[preset].default_gpus:,} GPUs.")
        return PRESETS[preset].default_gpus
    ss.pop("build_size_note", None)
    return gpus


def _preset_changed() -> None:
    """A newly picked reference design starts at the session's cluster size (or its own, when it cannot be built
    there)."""
    ss["gpus"] = _start_gpus(ss["preset"])


st.title("Fabric & BOM")
st.caption("Pick a reference design and a GPU count to see the network it needs: switches per tier, links, "
           "optics and copper, network capex (USD) and power (W). It opens at the session's cluster size (the "
           "Constraints page). Export the design and its bill of materials below.")
C.show_url_problems()

if "preset" not in ss or ss["preset"] not in PRESETS:
    ss["preset"] = next(iter(PRESETS))
if "gpus" not in ss:
    ss["gpus"] = _start_gpus(ss["preset"])
left, right = st.columns([1, 2])
with left:
    preset = st.selectbox("Reference design", list(PRESETS), format_func=lambda n: PRESETS[n].title,
                          key="preset", on_change=_preset_changed)
    st.caption(f"Source: {PRESETS[preset].source}")
    gpus = st.number_input("GPUs", min_value=8, max_value=1_048_576, step=8, key="gpus")
    if ss.get("build_size_note") and int(gpus) == PRESETS[preset].default_gpus:
        st.caption(ss["build_size_note"])

try:
    design, bom = _design(preset, int(gpus))
except FabricError as err:
    st.error(C.public_message(err))
    C.stop()
structure = bom["structure"]

with right:
    c1, c2, c3, c4 = st.columns(4)
    # written as the Design page, Compare and the brief write them (fabric.review.figures)
    c1.metric("Network capex", figure_text(bom["cost_usd"], "usd"))
    c2.metric("Per GPU", figure_text(bom["cost_per_gpu_usd"], "usd"))
    c3.metric("Network power", figure_text(bom["power_w"], "power"))
    c4.metric("Share of cluster capex", f"{bom['network_share_of_capex']:.1%}")
    st.caption(f"{design.name}: {structure['tiers']} switch tier(s), radix {structure['radix']} at "
               f"{structure['link_speed_gbps']:g} Gb/s, {structure['planes']} plane(s).")
    note = _unit_note(C._design_json(design), C.catalog_bundle().key, C.catalog_bundle().catalog)
    if note:
        st.info(C.md_text(note))

a, b = st.columns(2)
with a:
    st.subheader("Switches per tier")
    C.table(pd.DataFrame({"tier": list(bom["switches"]), "switches": list(bom["switches"].values())}),
                 column_config={"switches": st.column_config.NumberColumn(format="localized")},
                 hide_index=True)
    st.caption("Switch count in each tier of the design (leaf = first tier above the NICs).")
with b:
    st.subheader("Links per tier pair")
    C.table(pd.DataFrame({"links": list(bom["links"]), "count": list(bom["links"].values())}), hide_index=True,
                 column_config={"count": st.column_config.NumberColumn(format="localized")})
    st.caption("Physical links (one cable each) between the tiers named.")

st.subheader("Bill of materials")
C.bom_table(bom)
st.caption("One row per item and place; totals are count x catalog unit price; power excludes the servers.")

st.subheader("Racks and power")
C.rack_section(design, C.racks_of(design))

st.subheader("Export")
C.design_downloads(design, bom, "build_dl")
st.caption("The design file (open it with `fabric build design.json`), the bill of materials as CSV (USD and W, one "
           "row per item and place, then the total) and both together as JSON.")

C.sync_url()
