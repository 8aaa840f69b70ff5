"""fabric dashboard: entry point. Sets up the pages; every page reads input, calls fabric, and draws."""

import streamlit as st

st.set_page_config(page_title="fabric: network design for AI clusters", layout="wide")

pages = [
    st.Page("pages/build.py", title="Fabric & bill of materials", default=True),
]
st.navigation(pages).run()
