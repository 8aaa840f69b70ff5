"""Build a reference design (or any preset at another size) and show its bill of materials."""

import pandas as pd
import streamlit as st

from pages import _common as C

from fabric.design.presets import PRESETS, preset_design
from fabric.errors import FabricError
from fabric.topology import build_fabric
from fabric.cost import bill_of_materials

C.require_entry()


@st.cache_data(show_spinner=False)
def _bom(preset: str, gpus: int):
    design = preset_design(preset, gpus)
    fabric = build_fabric(design)
    bom = bill_of_materials(fabric)
    return design.name, fabric.structure, bom.to_dict()


st.title("fabric: network designs for AI clusters")
st.caption("Pick a reference design and a GPU count to see the network it needs: switches per tier, links, "
           "optics and copper, network capex (USD) and power (W).")

left, right = st.columns([1, 2])
with left:
    preset = st.selectbox("Reference design", list(PRESETS), format_func=lambda n: PRESETS[n].title,
                          key="preset")
    st.caption(f"Source: {PRESETS[preset].source}")
    gpus = st.number_input("GPUs", min_value=8, max_value=1_048_576, step=8,
                           value=PRESETS[preset].default_gpus, key="gpus")

try:
    name, structure, bom = _bom(preset, int(gpus))
except FabricError as err:
    st.error(C.public_message(err))
    st.stop()

with right:
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("Network capex", f"${bom['cost_usd'] / 1e6:,.2f}M")
    c2.metric("Per GPU", f"${bom['cost_per_gpu_usd']:,.0f}")
    c3.metric("Network power", f"{bom['power_w'] / 1e3:,.1f} kW")
    c4.metric("Share of cluster capex", f"{bom['network_share_of_capex']:.1%}")
    st.caption(f"{name}: {structure['tiers']} switch tier(s), radix {structure['radix']} at "
               f"{structure['link_speed_gbps']:g} Gb/s, {structure['planes']} plane(s).")

a, b = st.columns(2)
with a:
    st.subheader("Switches per tier")
    st.dataframe(pd.DataFrame({"tier": list(bom["switches"]), "switches": list(bom["switches"].values())}),
                 hide_index=True)
    st.caption("Switch count in each tier of the design (leaf = first tier above the NICs).")
with b:
    st.subheader("Links per tier pair")
    st.dataframe(pd.DataFrame({"links": list(bom["links"]), "count": list(bom["links"].values())}), hide_index=True)
    st.caption("Physical links (one cable each) between the tiers named.")

st.subheader("Bill of materials")
C.bom_table(bom)
st.caption("One row per item and place; totals are count x catalog unit price; power excludes the servers.")
