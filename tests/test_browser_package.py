"""The Design page's cabling section and design package in a real browser (issue 38): the checks, a rack's
elevation and links, and the zip downloaded and opened."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pandas as pd

from browser_support import VIEW, expect, idle, shot

LINK = ("/design?wl=sample%3Adlrm-dcnv2.json&families=clos%2Crail_optimized&budget_usd=4000000"
        "&design=rail_optimized%2Cib-ndr-64x400%2Cnic-cx7-400%2C1%2C1%2C1%2C1%2Cadaptive%2C1%2Cinfiniband"
        "%2Crail_aligned%2C0%2C0%2C0")


def test_design_page_cabling_and_package(server, browser, shots_dir):
    ctx = browser.new_context(viewport=VIEW, accept_downloads=True)
    page = ctx.new_page()
    page.goto(server + LINK)
    idle(page)
    main = page.get_by_test_id("stMain")
    expect(main).to_contain_text("Cabling and rack elevations", timeout=60_000)
    expect(main).to_contain_text("every check passes", timeout=30_000)
    expect(main).to_contain_text("every port used at most once")
    # the first rack's elevation is drawn (an SVG image) beside its links
    head = page.get_by_role("heading", name="Cabling and rack elevations").first
    head.scroll_into_view_if_needed()
    expect(main.locator("img").first).to_be_visible()
    shot(page, shots_dir, "design-cabling", anchor="Cabling and rack elevations")
    shot(page, shots_dir, "design-package", anchor="Share")
    with page.expect_download(timeout=120_000) as dl:
        page.get_by_role("button", name="Design package (zip)").click()
    z = zipfile.ZipFile(io.BytesIO(Path(dl.value.path()).read_bytes()))
    names = set(z.namelist())
    assert {"README.txt", "design.json", "cabling/plan.csv", "netbox/cables.csv", "brief.html"} <= names
    plan = pd.read_csv(io.BytesIO(z.read("cabling/plan.csv")))
    assert plan.shape[0] > 0 and not plan.duplicated(["b_device", "b_port", "b_lane"]).any()
    assert b"[FAILED]" not in z.read("cabling/checks.txt")
    assert b"fabric design report" in z.read("brief.html")
    # the evaluated workload's training step as ASTRA-sim input: a trace per rank, the groups, the network
    traces = [n for n in names if n.startswith("astra-sim/workload/") and n.endswith(".et")]
    assert {"astra-sim/network.yml", "astra-sim/system.json", "astra-sim/workload/workload.comm_groups.json",
            "astra-sim/README.txt"} <= names
    assert len(traces) >= 8 and f"astra-sim/workload/workload.{len(traces) - 1}.et" in names
    assert b"cannot express" in z.read("astra-sim/README.txt")
    ctx.close()
