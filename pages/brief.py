"""Brief: the one page a design review signs: the design to buy and why, the runner-up, resilience, what-ifs,
cheapest fixes and cost per step; as a page and as a one-file HTML report."""

from __future__ import annotations

import streamlit as st

from pages import _common as C
from fabric.ui_support import plans_view
from fabric.errors import FabricError
from fabric.brief import brief_sections
from fabric.search.recommend import recommend
from fabric.ui_support.brief_view import CHART_TITLES, brief_charts, brief_html

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
if plans_view.is_plan_objective(getattr(ss.get("search_job"), "workload", None)):
    st.info("The last search judged every design at its best parallelism plan (the Search page's plan column); the "
            "brief's own evaluations (baselines, failures, what-ifs, single changes) use the workload's own plan. "
            "The Design and Compare pages evaluate each design at its best plan.")
if C.search_snapshot() is not None and ss["search_job"].inputs_key != C.inputs_key():
    st.warning("The inputs changed since this front was computed: the brief describes the last search.")


@st.cache_data(show_spinner="Writing the brief (baselines, failures, what-ifs, single changes)...", max_entries=16)
def _brief(key: str, _front, _baselines, _workload, _constraints, _catalog, overrides_json: str, _beyond, _ties,
           label: str):
    import json

    from fabric.brief import review_brief

    return review_brief(_front, _baselines, _workload, _constraints, catalog=_catalog,
                        transport_overrides=json.loads(overrides_json), beyond_target=_beyond, ties=_ties,
                        workload_label=label)


wb, cb = C.workload_bundle(), C.catalog_bundle()
cons = C.constraints()
rec_key = recommend(res.front, res.baselines, p99_target_s=cons.p99_target_s).record.get("key")
try:
    brief = _brief(f"{ss['search_job'].search_id}|{C.inputs_key()}|{len(res.front)}", res.front, res.baselines,
                   wb.workload, cons, cb.catalog, C._overrides_json(), res.beyond_target(),
                   res.ties().get(rec_key, []), wb.label)
except FabricError as err:
    st.error(f"No brief: {C.public_message(err)}")
    C.stop()

sections = brief_sections(brief)
charts = brief_charts(brief)
for heading, lines in sections:
    st.subheader(heading)
    st.markdown("\n".join(f"- {C.md_text(line)}" for line in lines))
    for name, (after, caption) in CHART_TITLES.items():
        if after == heading and name in charts:
            st.image(str(charts[name]), width=760)
            st.caption(caption)

facts = [f"Workload: {wb.label}", f"Cluster: {cons.gpus:,} GPUs ({cons.gpu_model}, {cons.gpus_per_node} per server)"]
html = brief_html(brief, sections, facts=facts)
st.download_button("Brief (one HTML file)", html.encode(), file_name="review_brief.html", mime="text/html",
                   key="dl_brief", on_click="ignore")
st.caption(f"Every figure comes from fabric's own evaluations of the designs named, with the samples and seed of "
           f"every page ({brief['samples']} samples, seed {brief['seed']}); the HTML file holds the same sentences "
           f"and charts ({len(html.encode()) / 1e3:,.0f} kB, no script), the Design page the interactive charts.")

C.sync_url()
