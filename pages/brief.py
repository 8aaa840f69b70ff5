"""Brief: the one page a design review signs: the design to buy and why, the runner-up, resilience, what-ifs,
cheapest fixes and cost per step; as a page and as a one-file HTML report."""

from __future__ import annotations

import streamlit as st

from pages import _common as C
from fabric.errors import FabricError
from fabric.ui_support.report import Section, report_html

ss = st.session_state
C.require_entry()

st.title("Brief", help="Built from the last search's front with the same evaluations as the other pages "
                       "(fabric.brief).")
C.show_url_problems()
C.inputs_line()

res = C.finished_result()
if res is None or not res.front:
    st.info("The brief is written from a finished search: run one on the Search page (the first visit starts one).")
    C.page_link("search", "Open Search")
    C.stop()
C.robust_design_note(what="The brief ranks the front by its robust p99 and evaluates failures and what-ifs")
if C.search_snapshot() is not None and ss["search_job"].inputs_key != C.inputs_key():
    st.warning("The inputs changed since this front was computed: the brief describes the last search.")


@st.cache_data(show_spinner="Writing the brief (failures, what-ifs, single changes)...", max_entries=16)
def _brief(key: str, _front, _baselines, _workload, _constraints, _catalog, overrides_json: str):
    import json

    from fabric.brief import review_brief

    return review_brief(_front, _baselines, _workload, _constraints, catalog=_catalog,
                        transport_overrides=json.loads(overrides_json))


wb, cb = C.workload_bundle(), C.catalog_bundle()
try:
    brief = _brief(f"{ss['search_job'].search_id}|{C.inputs_key()}|{len(res.front)}", res.front, res.baselines,
                   wb.workload, C.constraints(), cb.catalog, C._overrides_json())
except FabricError as err:
    st.error(f"No brief: {C.public_message(err)}")
    C.stop()

from fabric.brief import brief_sections  # noqa: E402

sections = brief_sections(brief)
for heading, lines in sections:
    st.subheader(heading)
    st.markdown("\n".join(f"- {C.md_text(line)}" for line in lines))

html = report_html(f"fabric review brief: {brief['design']}",
                   [f"Workload: {wb.label}", f"Cluster: {C.constraints().gpus:,} GPUs"],
                   [Section(h, "", lines) for h, lines in sections])
st.download_button("Brief (one HTML file)", html.encode(), file_name="review_brief.html", mime="text/html",
                   key="dl_brief", on_click="ignore")
st.caption("Every figure comes from fabric's own evaluations of the designs named (same seed as the other pages); "
           "the Design page has the charts behind them.")

C.sync_url()
