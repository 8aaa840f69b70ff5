"""The dashboard's entry point, run by ``app.py`` (kept out of it: see there): the session's state from the link,
the heartbeat that keeps the session's search wanted, the navigation between pages, and the URL kept in step with
the view."""

import streamlit as st

from pages._common import init_state, sync_url


@st.fragment(run_every=10)
def heartbeat() -> None:
    """While this browser tab is open, on any page, tell the session's search it is still wanted; a search
    nobody watches any more is cancelled by the server after ``search_abandon_after_s`` (see
    fabric.ui_support.jobs), which ends its worker processes."""
    job = st.session_state.get("search_job")
    if job is not None and job.running:
        job.touch()


def main() -> None:
    """One run of the dashboard script."""
    st.set_page_config(page_title="fabric: network design for AI clusters", layout="wide")
    # Less empty space above the title: the page must fit a 1280x720 shared screen.
    st.html("<style>[data-testid='stMainBlockContainer'] {padding-top: 2rem; padding-bottom: 2rem;}"
            "h1 {font-size: 2.1rem !important; padding-bottom: 0.3rem !important;}"
            "h2 {font-size: 1.6rem !important;} h3 {font-size: 1.3rem !important;}</style>")
    init_state()
    heartbeat()
    pages = [
        st.Page("pages/workload.py", title="Workload", default=True),
        st.Page("pages/constraints.py", title="Constraints"),
        st.Page("pages/search.py", title="Search"),
        st.Page("pages/design.py", title="Design"),
        st.Page("pages/calibrate.py", title="Calibrate"),
        st.Page("pages/compare.py", title="Compare"),
        st.Page("pages/brief.py", title="Brief"),
        st.Page("pages/upgrade.py", title="Upgrade"),
        st.Page("pages/build.py", title="Fabric & BOM"),
    ]
    # An empty first slot: when a fragment's timed rerun (the search progress, the heartbeat) lands right after a
    # full rerun, Streamlit can drop the first element of the page; this keeps that from being the page's title.
    st.empty()
    st.navigation(pages, position="top").run()
    sync_url()
