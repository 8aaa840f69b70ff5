"""Non-UI helpers of the dashboard: no streamlit here (plotly is fine).

- :mod:`~fabric.search.designs`: a :class:`~fabric.design.Design` from a search record, gene tables, the
  recommended design of a front;
- :mod:`~fabric.ui_support.urlstate`: the view (workload choice, constraints, designs) to and from URL query
  parameters;
- :mod:`~fabric.ui_support.jobs`: a search running in the background (its driver in a process of its own:
  :mod:`~fabric.ui_support.search_process`), polled by the page;
- :mod:`~fabric.ui_support.charts`: the plotly figures every page (and the HTML report) draws;
- :mod:`~fabric.ui_support.topology_view`: an aggregated, tiered drawing of a built fabric;
- :mod:`~fabric.ui_support.compare`: gene-by-gene differences and "what money buys" between designs;
- :mod:`~fabric.ui_support.workload_view`: tables of what a workload says;
- :mod:`~fabric.ui_support.report`: a one-file HTML report of a design with its charts.
"""
