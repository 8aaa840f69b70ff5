"""Fabric & BOM: build a reference design (any preset at another size) and show, and export, its bill of
materials."""

import pandas as pd
import streamlit as st

from pages import _common as C

from fabric.design.presets import PRESETS, preset_design
from fabric.errors import FabricError
from fabric.topology import build_fabric
from fabric.cost import bill_of_materials
from fabric.ui_support import charts

C.require_entry()


@st.cache_data(show_spinner=False)
def _bom(preset: str, gpus: int):
    design = preset_design(preset, gpus)
    fabric = build_fabric(design)
    bom = bill_of_materials(fabric)
    return design, fabric.structure, bom.to_dict()


def _preset_changed() -> None:
    """A newly picked reference design starts at its own GPU count (a 131,072-GPU design is not drawn at 1,016)."""
    st.session_state["gpus"] = PRESETS[st.session_state["preset"]].default_gpus


st.title("Fabric & BOM")
st.caption("Pick a reference design and a GPU count to see the network it needs: switches per tier, links, "
           "optics and copper, network capex (USD) and power (W). Export the design and its bill of materials "
           "below.")
C.show_url_problems()

left, right = st.columns([1, 2])
with left:
    preset = st.selectbox("Reference design", list(PRESETS), format_func=lambda n: PRESETS[n].title,
                          key="preset", on_change=_preset_changed)
    st.caption(f"Source: {PRESETS[preset].source}")
    gpus = st.number_input("GPUs", min_value=8, max_value=1_048_576, step=8,
                           value=PRESETS[preset].default_gpus, key="gpus")

try:
    design, structure, bom = _bom(preset, int(gpus))
except FabricError as err:
    st.error(C.public_message(err))
    C.stop()

with right:
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("Network capex", charts.money_text(bom["cost_usd"]))
    c2.metric("Per GPU", f"${bom['cost_per_gpu_usd']:,.0f}")
    c3.metric("Network power", f"{bom['power_w'] / 1e6:,.2f} MW" if bom["power_w"] >= 1e6
              else f"{bom['power_w'] / 1e3:,.1f} kW")
    c4.metric("Share of cluster capex", f"{bom['network_share_of_capex']:.1%}")
    st.caption(f"{design.name}: {structure['tiers']} switch tier(s), radix {structure['radix']} at "
               f"{structure['link_speed_gbps']:g} Gb/s, {structure['planes']} plane(s).")

a, b = st.columns(2)
with a:
    st.subheader("Switches per tier")
    st.dataframe(pd.DataFrame({"tier": list(bom["switches"]), "switches": list(bom["switches"].values())}),
                 column_config={"switches": st.column_config.NumberColumn(format="localized")},
                 hide_index=True)
    st.caption("Switch count in each tier of the design (leaf = first tier above the NICs).")
with b:
    st.subheader("Links per tier pair")
    st.dataframe(pd.DataFrame({"links": list(bom["links"]), "count": list(bom["links"].values())}), hide_index=True,
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
