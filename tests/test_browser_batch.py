"""The Workload page at 131,072 GPUs says what the preset's global batch is and how the plan keeps it (issue 39
item 1), in a real browser."""

from __future__ import annotations

from browser_support import VIEW, expect, idle, shot


def test_workload_page_shows_the_batch_at_131k(server, browser, shots_dir):
    ctx = browser.new_context(viewport=VIEW)
    page = ctx.new_page()
    page.goto(server + "/workload?wl=plan%3Allama3-70b%3A131072&gpus=131072")
    idle(page)
    main = page.get_by_test_id("stMain")
    expect(main).to_contain_text("Global batch 512 sequences = 4.19 M tokens per step", timeout=90_000)
    expect(main).to_contain_text("each data-parallel replica runs 1 micro-batch of 1 sequence")
    expect(main).to_contain_text("TP 8, PP 4, CP 8, DP 512")
    expect(main).to_contain_text("Global batch kept at 512 sequences (4.19 M tokens): at 131,072 GPUs the preset's "
                                 "TP 8 x PP 4 would need 4,096 data-parallel replicas")
    shot(page, shots_dir, "workload-batch-131k", anchor="What fabric understood")
    ctx.close()
