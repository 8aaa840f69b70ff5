"""Brief: the one page a design review signs: the design to buy and why, against the baselines as drawn and as
tuned, the runner-up, resilience, what-ifs, cheapest fixes and cost per step, all from the records of the last
search's context; as a page and as a one-file HTML report."""

from __future__ import annotations

import streamlit as st

from pages import _common as C
from fabric.errors import FabricError
from fabric.review.brief import brief_sections
from fabric.search.recommend import recommend
from fabric.ui_support.brief_view import CHART_TITLES, brief_charts, brief_html

ss = st.session_state
C.require_entry()

st.title("Brief", help="Written from the last search's front and the records of its designs in the search's context "
                       "(fabric.review.brief, fabric.review): the same figures as the Search, Design and Compare pages.")
C.show_url_problems()
C.context_line()

ctx, why = C.context_or_error()
if ctx is None:
    st.error(f"No context to write a brief in: {why}")
    C.stop()
res = C.result_here()
if res is None or not res.front:
    note = C.stale_result_note()
    st.info(note or "The brief is written from a finished search: run one on the Search page (the first visit "
                    "starts one).")
    C.page_link("search", "Open Search")
    C.stop()


@st.cache_resource(show_spinner="Writing the brief (baselines as tuned, failures, what-ifs, single changes)...",
                   max_entries=16)
def _brief(key: str, _res, _ctx, _ties):
    from fabric.review.brief import review_brief

    def record_of(design, row):
        return C._record(_ctx.key, C._design_json(design), _ctx, design, row)

    return review_brief(_res.front, _res.baselines, _ctx, beyond_target=_res.beyond_target(), ties=_ties,
                        record_of=record_of)


cons = C.constraints()
rec_key = recommend(res.front, res.baselines, p99_target_s=cons.p99_target_s).record.get("key")
try:
    brief = _brief(f"{ss['search_job'].search_id}|{ctx.key}|{len(res.front)}|{res.evaluations}", res, ctx,
                   res.ties().get(rec_key, []))
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

facts = [f"Context: {brief['context']}"]
html = brief_html(brief, sections, facts=facts)
st.download_button("Brief (one HTML file)", html.encode(), file_name="review_brief.html", mime="text/html",
                   key="dl_brief", on_click="ignore")
st.caption(f"Every figure is from the records of the designs named in one context ({C.md_text(brief['context'])}), "
           f"the same records the Search, Design and Compare pages show; the HTML file holds the same sentences and "
           f"charts ({len(html.encode()) / 1e3:,.0f} kB, no script), the Design page the interactive charts.")

C.sync_url()
