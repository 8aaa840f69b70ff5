"""Start the dashboard server with its libraries already imported.

``python scripts/serve.py [options of streamlit run]`` runs ``streamlit run app.py [options]`` after importing
numpy, pandas, plotly (and its chart template), pymoo and fabric's modules. Streamlit runs nothing of the app until
a browser connects, so without this the first visitor after a server start waits for those imports (about 1 s on
a 2-core machine) and for plotly's first figure (its template and property validators load on first use).
``scripts/run_dashboard.sh`` and the browser tests start the dashboard this way; ``streamlit run app.py`` still works
(the first visit is then slower). It also starts the fork server the search workers are forked from, with
fabric imported in it, so a search's worker starts at once instead of importing for a second.

Only libraries and ``fabric`` are imported here, not ``pages``: the pages define Streamlit caches, which must be
created inside the running server.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def preload() -> None:
    """Import what the pages use and draw one styled figure (plotly builds its template on first use)."""
    import plotly.graph_objects as go

    import fabric.evaluate  # noqa: F401
    import fabric.search.plan_space.inner  # noqa: F401
    import fabric.search  # noqa: F401
    import fabric.ui_support.jobs  # noqa: F401
    import fabric.ui_support.plans_view  # noqa: F401
    import fabric.workload.ingest  # noqa: F401
    from fabric.ui_support import charts

    charts.style(go.Figure(go.Scatter(x=[0.0], y=[0.0]))).to_plotly_json()
    # search workers are forks of a server process that has fabric imported (fabric.search.runners)
    from fabric.search.runners import start_fork_server

    start_fork_server()


def main() -> None:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    preload()
    from streamlit.web import cli

    sys.argv = ["streamlit", "run", str(ROOT / "app.py"), *sys.argv[1:]]
    cli.main(prog_name="streamlit")


if __name__ == "__main__":
    main()
