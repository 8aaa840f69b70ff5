"""Search: the genetic search for the Pareto front of network capex vs p99 step time, running in the background
while the page polls it; click a design (chart or table) to open it. With the robust mode on (Workload page) the
search is robust across the job mix: each design's spread across cases, the brittle ones, and each case's own
front beside the robust one. With the plan space auto every design is judged at its best parallelism plan: the
front table has a plan column and the page says what the workload's own plan costs each front design."""

from __future__ import annotations

import streamlit as st

from pages import _common as C
from fabric.ui_support import charts, plans_view, robust_view, serving_front
from fabric.design.policy import TIE_RULE
from fabric.search.recommend import recommend
from fabric.search.ties import ties_text
from fabric.units import time_text
from fabric.search.robust import RobustObjective
from fabric.errors import FabricError
from fabric.ui_support.jobs import SearchAllowance, SearchJob, convergence_note, live_job, recent_job
from fabric.ui_support.saved_searches import prune, state_dir
from fabric.ui_support.urlstate import MAX_EVALS

ss = st.session_state
C.require_entry()

st.title("Search", help="NSGA-II over topology family, switch and NIC models, NICs per GPU, oversubscription, "
                        "planes, routing, queue pairs, transport, placement and options, seeded with the designs a "
                        "person would draw (the baselines). Each design is built, priced and evaluated (256 Monte "
                        "Carlo samples of the step).")
C.show_url_problems()
C.context_line(prepared=False)
C.calibration_line("clear_cal_search", search=True)


def _allowance() -> SearchAllowance:
    if "search_allowance" not in ss:
        ss["search_allowance"] = SearchAllowance()
    return ss["search_allowance"]


def _with_current_job() -> SearchAllowance:
    """The session's allowance counting what its current search has evaluated so far (a search that is replaced
    early gives back what it did not evaluate)."""
    cur = ss.get("search_job")
    mine = cur is not None and not ss.get("search_watching") and not getattr(cur, "_charged", False)
    spent = cur.spent() if mine else 0
    return SearchAllowance(limit=_allowance().limit, spent=_allowance().spent + spent)


def _adopt(job: SearchJob) -> None:
    """Make ``job`` the session's search, counting the one it replaces against the session's allowance."""
    old = ss.get("search_job")
    if old is not None and not ss.get("search_watching"):  # a search opened by link is left running for its owner
        old.cancel()
        _allowance().charge(old)
    ss["search_watching"] = False
    ss["search_job"] = job.start()
    ss["url_search_id"] = job.search_id
    # a new search makes a new recommendation: the Design page opens it, not a design picked from the last front
    for key in ("design_genes", "design_name", "design_pick"):
        ss.pop(key, None)


def start_search() -> None:
    """Start a search on the current inputs (an error message instead when the session's allowance is spent)."""
    ss.pop("search_refused", None)
    budget = int(ss["search_evals"])
    try:
        _with_current_job().check(budget)
        wb, cb = C.workload_bundle(), C.catalog_bundle()
        workload = C.search_workload()   # the robust objective of the job mix, or the plan objective (plan space auto)
        label = wb.label if workload is wb.workload else \
            f"{wb.label}, every design at its best plan" if plans_view.is_plan_objective(workload) else \
            robust_view.mix_summary(workload)
        folder = state_dir()
        prune(folder)
        job = SearchJob(workload, C.constraints(), budget_evals=budget, seed=int(ss["search_seed"]),
                        samples=C.SAMPLES_PER_EVALUATION,
                        catalog=cb.catalog, inputs_key=C.inputs_key(), transport_overrides=C.calibration_overrides(),
                        state_dir=folder, label=label)
    except (FabricError, OSError) as err:
        ss["search_refused"] = plans_view.dashboard_words(C.public_message(err))
        return
    _adopt(job)


def open_linked_search(search_id: str) -> bool:
    """Show the search a link names: the one this server runs or ran (a shared link during a design review: shown
    as it is, finished or not), else continue it from its saved state (a reload after a server restart); True if
    it did either."""
    known = live_job(search_id) or recent_job(search_id)
    if known is not None:
        ss["search_job"], ss["search_watching"], ss["url_search_id"] = known, True, search_id
        return True
    try:
        job = SearchJob.resume(search_id, state_dir())
    except (FabricError, OSError) as err:
        ss["url_problems"] = ss.get("url_problems", []) + [C.public_message(err)]
        return False
    if job is None:
        ss["url_problems"] = ss.get("url_problems", []) + [
            "the search this link names is no longer saved on this server, so a new search with the link's "
            "settings was started"]
        return False
    try:
        _allowance().check(max(0, job.budget_evals - job.snapshot().evaluations))
    except FabricError as err:
        ss["search_refused"] = str(err)
        return False
    _adopt(job)
    return True


def show_settings_of(job) -> None:
    """Set the budget and seed fields (and the link) to those of the search the page shows, once per search: a
    link opened on a search shows the budget that ran, not a value typed later and never run."""
    if job is None or ss.get("_fields_for") == id(job):
        return
    ss["_fields_for"] = id(job)
    ss["search_evals"] = ss["in_evals"] = int(job.budget_evals)
    ss["search_seed"] = ss["in_seed"] = int(job.seed)


def _open(key: str, records: list) -> None:
    rec = next((r for r in records if r.get("key") == key), None)
    if rec is not None:
        C.select_design(C.genes_of_record(rec), rec["design"])
        ss["_open_design"] = True


def on_chart_select() -> None:
    ev = ss.get("pareto_chart")
    pts = (ev or {}).get("selection", {}).get("points", []) if isinstance(ev, dict) else \
        getattr(getattr(ev, "selection", None), "points", [])
    snap = C.search_snapshot()
    if pts and snap is not None:
        front_keys = {r.get("key") for r in snap.front}
        # a click on overlapping markers reports every one: the front's design first (what its row opens)
        pts = sorted(pts, key=lambda p: (p.get("customdata") or [None])[0] not in front_keys)
        cd = pts[0].get("customdata")
        if cd:
            res = snap.result
            _open(cd[0], (res.records if res is not None else []) + snap.front + snap.baselines)


# a link naming a search: show that search (its budget and seed fill the fields below)
if ss.get("search_job") is None and ss.get("url_search_id") and "search_refused" not in ss \
        and not ss.get("_link_opened"):
    ss["_link_opened"] = True
    open_linked_search(ss["url_search_id"])
    C.show_url_problems()
show_settings_of(ss.get("search_job"))

def _model_named() -> None:
    """The model picker changed: a search refused for want of a model is no longer refused."""
    ss["plan_model"] = ss["in_plan_model"]
    ss.pop("search_refused", None)


def plan_space_controls() -> str | None:
    """The plan-space switch and, when the workload's model is not recognised (or was named), the model picker;
    returns the message said when the workload cannot have plans."""
    from fabric.workload.presets import training_models

    robust = C.robust_on()
    shown = "fixed" if robust else ss.get("plan_space", "fixed")
    if ss.get("in_plan_space") != shown:
        ss["in_plan_space"] = shown
    left, right = st.columns([1.3, 1])
    space = left.radio("Plan space", list(plans_view.PLAN_SPACES), format_func=plans_view.PLAN_SPACES.get,
                       horizontal=True, key="in_plan_space", help=plans_view.PLAN_SPACE_HELP, disabled=robust,
                       on_change=lambda: ss.update(plan_space=ss["in_plan_space"]))
    if robust:
        right.caption("Plan space auto is off while the search is robust across a job mix: a mix judges every "
                      "workload at its own plan (turn the robust mode off on the Workload page to search the plans).")
        return None
    ss["plan_space"] = space
    if space != "auto":
        return None
    basis, err = C.plan_basis_or_error()
    if err is not None or ss.get("plan_model"):
        models = list(training_models())
        if "in_plan_model" not in ss or ss["in_plan_model"] != ss.get("plan_model"):
            ss["in_plan_model"] = ss.get("plan_model")
        right.selectbox("Model of the workload", models, key="in_plan_model",
                        placeholder="name the model", help="The workload's training model, when fabric does not "
                        "recognise it from the job's name (fabric search --model).",
                        on_change=_model_named)
    if basis is None:
        st.error(f"Plan space auto: no search can start: {err}" if not ss.get("plan_model") else
                 f"Plan space auto with model {ss['plan_model']}: no search can start: {err}")
    else:
        right.caption(C.md_text(f"Plans of {basis.model.name}, from {basis.source}; "
                                f"{basis.gpus:,} GPUs, {basis.global_batch:,} sequences per step for every plan."))
    return err


plans_problem = plan_space_controls()
a, b, c, d = st.columns([1.2, 1.2, 1, 1])
if "in_evals" not in ss:
    ss["in_evals"] = int(ss["search_evals"])
if "in_seed" not in ss:
    ss["in_seed"] = int(ss["search_seed"])
evals = a.number_input("Evaluation budget (designs)", min_value=20, max_value=MAX_EVALS, step=100, key="in_evals",
                       help="Distinct designs evaluated; 300 takes a few seconds for a 1,024-GPU cluster.")
seed = b.number_input("Seed", min_value=0, max_value=2 ** 31 - 1, step=1, key="in_seed",
                      help="The same seed and inputs give the same front.")
ss["search_evals"], ss["search_seed"] = int(evals), int(seed)
c.write("")
start = c.button("Start search", type="primary", key="start_search", width="stretch")
d.write("")
cancel = d.button("Cancel", key="cancel_search", width="stretch")

job = ss.get("search_job")
if start or (job is None and "search_refused" not in ss):  # the first visit starts a search on the current inputs
    start_search()
    job = ss.get("search_job")
    ss["_fields_for"] = id(job)
if cancel and job is not None:
    job.cancel()
if ss.get("search_refused") and ss["search_refused"] != plans_problem:     # said once, above
    st.error(f"The search was not started: {ss['search_refused']}")
if job is not None and job.running and not ss.get("search_watching"):   # true for the whole run, not a moment
    after = max(0, _allowance().remaining() - job.budget_evals)
    st.caption(f"This session may evaluate {after:,} more designs after the running search (budget "
               f"{job.budget_evals:,}; server limit max_session_evaluations = {_allowance().limit:,}).")
else:
    st.caption(f"This session may still evaluate {_with_current_job().remaining():,} designs (server limit "
               f"max_session_evaluations = {_allowance().limit:,}).")
if job is None:
    C.stop()
if ss.get("search_watching"):
    st.caption("This search was opened from a shared link and runs for the page that started it; **Start search** "
               "runs one of your own.")
job.touch()

if ss.pop("_open_design", False):
    st.switch_page(C.PAGE_FILES["design"])


def _figure(name: str, snap, live: bool, inputs: tuple, build):
    """A chart's figure; in the live panel (redrawn twice a second) built again only when the search has moved on
    or ``inputs`` changed, so the server's time goes to the search."""
    if not live:
        return build()
    key = (id(ss.get("search_job")), snap.phase, snap.state, snap.generation, snap.evaluations, inputs)
    memo = ss.setdefault("_live_figures", {})
    if name not in memo or memo[name][0] != key:
        memo[name] = (key, build())
    return memo[name][1]


def draw(snap, *, live: bool) -> None:
    """Progress, Pareto front, hypervolume, summary and the front table of one snapshot."""
    budget = snap.budget_evals or 0
    if snap.state == "queued":
        ahead = f"{snap.queue_position} ahead of it" if snap.queue_position else "next in line"
        st.progress(0.0, text=f"Search waiting for a free slot on the server ({ahead}; the server runs at most "
                              f"max_concurrent_searches at once), {snap.elapsed_s:.0f} s")
        return
    if snap.phase == "plans":      # (the empty charts below are drawn meanwhile: the browser loads plotly)
        st.progress(0.0, text=f"Search running: ranking the parallelism plans on a few probe designs, the shortlist "
                              f"every design will be tried at (once per server for the same inputs), "
                              f"{snap.elapsed_s:.1f} s")
    else:
        state = {"running": "running", "done": "finished", "cancelled": "cancelled", "failed": "failed"}[snap.state]
        if snap.state == "cancelled" and ss["search_job"].abandoned:
            state = "cancelled (no open page was watching it)"
        resumed = ""
        if snap.continued_evals:
            resumed = f", continued from generation {snap.resumed_from} with {snap.continued_evals:,} more evaluations"
        elif snap.resumed_from:
            resumed = (f", continued from its saved state at generation {snap.resumed_from} after a server restart"
                       if snap.after_restart else
                       f", reopened from its saved state at generation {snap.resumed_from}")
        over = ""
        if budget and snap.evaluations > budget and not snap.running:
            pop = getattr(ss["search_job"], "pop_size", None)
            over = (f"; {snap.evaluations - budget:,} over the budget: a generation"
                    + (f" ({pop} designs)" if pop else "") + " is evaluated whole once started, and the baselines, "
                    "their tuned policies and the check of the recommendation's neighbours count as evaluations "
                    "too")
        st.progress(snap.fraction, text=f"Search {state}: generation {snap.generation}, {snap.evaluations:,} "
                                        f"designs evaluated (budget {budget:,}), {snap.elapsed_s:.1f} s{resumed}"
                                        f"{over}")
    if snap.state == "failed":
        st.error(f"The search stopped: {C.public_message(snap.error) if snap.error else 'unknown error'}")
        return
    if not live:
        convergence_status(snap)
    res = snap.result
    cons = ss["search_job"].constraints      # the search's own (a front is judged by the limits it ran with)
    if not live and res is not None and res.feasible:
        recommendation_box(res, cons)       # first, so a 1280x720 screen shows it without scrolling
    others = [] if live or res is None else [r for r in res.records if r.get("feasible")]
    robust = robust_view.is_robust(snap.front + snap.baselines) or \
        isinstance(getattr(ss.get("search_job"), "workload", None), RobustObjective)   # (also before any record)
    workload = C.workload_bundle().workload
    only = serving_front.is_serving_only(workload)
    axes = serving_front.front_axis_options(list(snap.front) + list(snap.baselines), only)
    y_col = serving_front.default_front_axis(cons, axes, only)
    if len(axes) > 1:      # a workload with serving jobs: its front can be drawn on the serving figures too
        if ss.get("front_y") not in axes:
            ss["front_y"] = y_col
        y_col = st.radio("y axis of the front", list(axes), format_func=axes.get, horizontal=True, key="front_y",
                         help="The record column drawn against the cost; every front design keeps all of them "
                              "in its hover and in the table below.")
    y_title = axes[y_col]
    extra = {}
    if robust and y_col == "p99_s":
        ref_name, refs = robust_view.case_references(snap.baselines)
        y_title = f"robust p99, {_robust_mode(ss['search_job'])}"
        extra = {"ranges": robust_view.spread_ranges(snap.front, refs)}
        if res is not None:
            extra["flagged"] = robust_view.brittle_notes(res.front, res.records)
    left, right = st.columns([2, 1])
    with left:
        st.subheader("Pareto front: network capex vs robust p99 across the job mix" if robust and y_col == "p99_s"
                     else f"Pareto front: network capex vs {y_title}")
        beyond = [] if live or res is None else res.beyond_target()
        inputs = (y_col, robust, cons.p99_target_s, cons.budget_usd)
        fig = _figure("pareto", snap, live, inputs, lambda: charts.pareto_figure(
            snap.front, snap.baselines, others=others, p99_target_s=cons.p99_target_s, beyond=beyond,
            budget_usd=cons.budget_usd, height=470 if robust else 400, y_col=y_col, y_title=y_title,
            step_word="unloaded request" if only else "step", **extra))
        if live:
            st.plotly_chart(fig, width="stretch", theme=None, key="pareto_live")
        else:
            st.plotly_chart(fig, width="stretch", theme=None, key="pareto_chart", on_select=on_chart_select,
                            selection_mode="points")
        if robust and y_col == "p99_s":
            st.caption(C.md_text(
                "Each dot is a design (x: network capex in USD, y: its robust p99: the "
                f"{_robust_mode(ss['search_job'])} "
                f"of its slowdowns against '{ref_name}' on every case, times the cases' weighted mean p99 on "
                f"'{ref_name}', so in seconds); lower-left is better. Grey bars: each front design's spread, from "
                "its best to its worst case on the same scale"
                + ("; red rings: brittle designs (the best buy for one case, far off for another)"
                   if extra.get("flagged") else "") + ". Black symbols: the baselines. Click a dot to open the "
                "design."))
        else:
            st.caption("Each dot is a design; " + serving_front.front_caption(cons, y_col, only,
                                                                           unit=charts.axis_unit(fig, "yaxis"))
                       + " Coloured: the "
                       "front by topology family; grey: other feasible designs; "
                       + ("hollow grey: designs that meet every limit but the p99 target (the trade-off the target "
                          "cuts off); " if beyond else "")
                       + "black symbols: the baselines; dashed lines: p99 target and budget. Click a dot to open the "
                         "design.")
    with right:
        st.subheader("Search progress")
        st.plotly_chart(_figure("hypervolume", snap, live, (), lambda: charts.hypervolume_figure(
                            snap.hv_history, finished=not snap.running, height=330)),
                        width="stretch", theme=None, key="hv_live" if live else "hv_chart")
        st.caption("Hypervolume dominated by the front after each generation, in % of "
                   + ("the best so far" if snap.running else "this run's final value")
                   + ", against designs evaluated: it rises while the front improves and flattens as the search "
                     "converges (100 % at the end of every run, so runs read alike).")
    if live:
        return
    if res is not None and not res.feasible:
        st.error(f"No design meets every constraint: {res.infeasible_reason}. Relax a limit on the Constraints "
                 "page.")
        return
    if res is not None:
        st.subheader("What the front says")
        advice = recommend(res.front, res.baselines, p99_target_s=cons.p99_target_s)
        rec = advice.record
        lines = res.summary_lines()
        if C.result_here() is res:      # (the current baselines only beside a front of the current inputs)
            for b in C.baselines():     # a baseline paid for a nearly empty scalable unit: say so beside its savings
                note = C.su_note(b)
                if note and "->" in note:
                    lines.append(f"'{b.name}': {note}")
        if beyond:
            cheap = min(beyond, key=lambda r: r["cost_usd"])
            lines.insert(2, f"{len(beyond)} more design{'s meet' if len(beyond) != 1 else ' meets'} every limit but the "
                            f"p99 target of {time_text(cons.p99_target_s)} (hollow grey on the chart): the "
                            f"cheapest, '{cheap['design']}', costs ${cheap['cost_usd']:,.0f} at p99 "
                            f"{time_text(cheap['p99_s'])}.")
        if robust:
            ref_name, _ = robust_view.case_references(res.baselines)
            n_cases = len({c for r in res.front for c in (r.get("p99_by_case") or {})})
            lines.insert(0, f"p99 here is the robust p99: the {_robust_mode(ss['search_job'])} of each design's "
                            f"slowdowns against '{ref_name}' over the {n_cases} cases, in seconds of the cases' "
                            "weighted mean p99 on it.")
        objective = _plan_objective_of(ss["search_job"])
        if objective is not None:       # what each front design's plan costs: the CLI's sentences
            lines += plans_view.front_plan_sentences(res.front, objective)
        st.markdown("\n".join(f"- {C.md_text(line)}" for line in lines))
        front = res.front_frame()
        serving_cols = [c for c in serving_front.SERVING_COLUMNS if c in front.columns]
        blast_cols = [c for c in ("gpus_lost_on_worst_switch_failure", "p99_failure_slowdown") if c in front.columns]
        table = front[[c for c in ("design", "cost_usd", "p99_s", "p50_s", *serving_cols, *blast_cols, "power_w",
                                   "family", "switch_model", "nic_model", "planes", "transport", "policy",
                                   "free_upgrade_of",
                                   "ties") if c in front.columns]].copy()     # (a robust record: no p50 of its own)
        if "p99_failure_slowdown" in table.columns:   # a design that does not survive has no finite figure
            table["p99_failure_slowdown"] = [None if v is None or v != v or v > 1e6 else v
                                             for v in table["p99_failure_slowdown"]]
        for c in serving_cols:     # ms and %, like the Design page; a service above capacity has no finite latency
            table[c] = [None if v >= 1e8 else v * 1e3 for v in table[c]] if c.endswith("_s") else table[c] * 100
        table.insert(0, "recommended", ["★" if rec is not None and n == rec["design"] else "" for n in table["design"]])
        plan_cols = {}
        if objective is not None and "plan" in front.columns:     # every design at its best plan
            from fabric.plans.report import given_plan_name

            recs = front.to_dict("records")
            given = given_plan_name(objective.basis)
            at = list(table.columns).index("p50_s") + 1
            table.insert(at, "plan", [plans_view.compact_plan(r) for r in recs])
            table.insert(at + 1, "given_plan_slowdown", [r.get("given_plan_slowdown") for r in recs])
            plan_cols = {
                "plan": st.column_config.TextColumn(
                    "plan", width="large", help="The parallelism plan the design is judged at (its best of the "
                    "shortlist): TP x CP x PP x DP x EP degrees (CP, EP when above 1), micro-batches per step of "
                    "so many sequences (mb), ZeRO stage, rank order (fastest-varying first)"),
                "given_plan_slowdown": st.column_config.NumberColumn(
                    f"with {given}", format="percent",
                    help=f"How much slower the p99 step is with {given} (empty: it does not fit the design)")}
        table["power_w"] = table["power_w"] / 1e3
        case_cols = {}
        if robust:      # each design's spread across the cases, the brittle ones flagged, every case's p99
            rob = robust_view.front_columns(front.to_dict("records"), res.records, res.baselines)
            table = table.drop(columns=[c for c in ("p50_s",) if c in table.columns])
            table.insert(3, "brittle", ["⚠ " + b if b else "" for b in rob["brittle"]])
            for i, col in enumerate(["robust slowdown", "spread across cases", "worst case"]):
                table.insert(4 + i, col, rob[col].values)
            for col in [c for c in rob.columns if c.startswith("p99 ")]:
                table[col] = rob[col].values
                case_cols[col] = st.column_config.NumberColumn(col, format="%.4g")
        st.subheader(f"Front designs ({len(front)})")
        sel = st.dataframe(
            table, hide_index=True, width="stretch", on_select="rerun", selection_mode="single-row",
            key="front_table",
            column_config={"recommended": st.column_config.TextColumn("", width="small"),
                           "design": st.column_config.TextColumn("design", width="large"),
                           "cost_usd": st.column_config.NumberColumn("network capex (USD)", format="dollar"),
                           "p99_s": st.column_config.NumberColumn(
                               "robust p99 (s)" if robust else
                               "p99 unloaded request (s)" if only else "p99 step (s)", format="%.4f"),
                           "p50_s": st.column_config.NumberColumn(
                               "p50 unloaded request (s)" if only else "p50 step (s)", format="%.4f"),
                           "serving_ttft_p99_s": st.column_config.NumberColumn(
                               "serving p99 TTFT (ms)", format="%.1f",
                               help="The worst serving job's p99 time to first token at its offered load "
                                    "(empty: load above capacity)"),
                           "serving_tpot_p99_s": st.column_config.NumberColumn(
                               "serving p99 TPOT (ms)", format="%.2f",
                               help="The worst serving job's p99 time per output token at its offered load"),
                           "serving_slo_attainment": st.column_config.NumberColumn(
                               "SLO attainment (%)", format="%.1f",
                               help="The worst serving job's share of requests within both latency budgets"),
                           "gpus_lost_on_worst_switch_failure": st.column_config.NumberColumn(
                               "GPUs lost, worst failure", format="%d",
                               help="GPUs the worst single switch failure takes out of the job (whole servers left "
                                    "without a NIC port; a GPU whose own NIC is down sends through its server's "
                                    "other NICs over NVLink and is not lost)"),
                           "p99_failure_slowdown": st.column_config.NumberColumn(
                               "p99 slowdown, worst failure", format="percent",
                               help="How much slower the p99 step is under the worst single switch or cable failure "
                                    "(evaluated with the same seed)"),
                           "power_w": st.column_config.NumberColumn("network power (kW)", format="%.1f"),
                           "family": st.column_config.TextColumn("family (hardware)"),
                           "switch_model": st.column_config.TextColumn("switch (hardware)"),
                           "nic_model": st.column_config.TextColumn("NIC (hardware)"),
                           "transport": st.column_config.TextColumn("transport (hardware)"),
                           "policy": st.column_config.TextColumn(
                               "free policy", help="routing (queue pairs under ECMP), placement rule, PXN: "
                                                   "configuration, no hardware bought"),
                           "free_upgrade_of": st.column_config.TextColumn(
                               "free upgrade of", help="baselines whose hardware this design is, run with a "
                                                       "better free policy: the same cost, a shorter p99"),
                           "ties": st.column_config.TextColumn(
                               "ties", help="Other evaluated designs with exactly this cost and p99 (the network does "
                                            "not set the pace there); the front keeps the plainest by the tie rule"),
                           "brittle": st.column_config.TextColumn("brittle", width="medium"),
                           "robust slowdown": st.column_config.NumberColumn(format="%.3f"),
                           **plan_cols,
                           "spread across cases": st.column_config.NumberColumn(format="%.2fx"),
                           **case_cols})
        st.caption("The non-dominated designs, cheapest first (capex in USD, "
                   + ("unloaded request times in seconds, serving p99 TTFT/TPOT in ms, SLO attainment in %, " if only
                      else "step times in seconds, " + ("serving p99 TTFT/TPOT in ms, SLO attainment in %, "
                                                         if serving_cols else ""))
                   + "power in kW); "
                   f"★ marks the recommended one: {C.md_text(advice.rule)}. Hardware columns are what the money "
                   "buys; 'free policy' is configuration that costs nothing; 'free upgrade of' names a baseline "
                   "with this design's hardware and a worse policy. Select a row to open it."
                   + (" Robust columns: the slowdown the search minimised (1.0: as fast as the reference on its "
                      "worst case, or on the weighted mean), the spread (slowest case over fastest, each relative to "
                      "the reference), the worst case, ⚠ brittle designs with the cases that make them so, and the "
                      "p99 on every case in seconds." if robust else "")
                   + (" Every design is judged at its best parallelism plan (column 'plan'); the next column says "
                      "how much slower its p99 step is with the workload's own plan." if plan_cols else ""))
        rows = sel.selection.rows if sel is not None and hasattr(sel, "selection") else []
        if rows and ss.get("_front_sel") != rows[0]:
            ss["_front_sel"] = rows[0]
            r = front.iloc[rows[0]].to_dict()
            C.select_design(C.genes_of_record(r), r["design"])
            st.switch_page(C.PAGE_FILES["design"])
        elif not rows:
            ss["_front_sel"] = None
        x, y, z = st.columns([3, 1, 1])
        names = list(front["design"])
        default = names.index(rec["design"]) if rec is not None and rec["design"] in names else 0
        pick = x.selectbox("Design to open", names, index=default, key="open_pick", label_visibility="collapsed")
        if y.button("Open design", key="open_design", width="stretch"):
            r = front[front["design"] == pick].iloc[0].to_dict()
            C.select_design(C.genes_of_record(r), r["design"])
            st.switch_page(C.PAGE_FILES["design"])
        from fabric.search.result import csv_frame

        z.download_button("Front (CSV)", csv_frame(front).to_csv(index=False).encode(), file_name="pareto_front.csv",
                          mime="text/csv", key="dl_front", on_click="ignore", width="stretch")
        if robust:
            draw_case_fronts(res)


def convergence_status(snap) -> None:
    """Beside an ended search's progress: "converged", or "not converged: continue" with a one-click **Continue**
    that goes on from the search's saved state (its budget again, or what a Cancel left of it:
    fabric.ui_support.jobs)."""
    job = ss["search_job"]
    if snap.result is None:
        return
    note = C.md_text(convergence_note(snap.result))
    if not snap.can_continue:
        st.caption(f"**Converged.** {note}")
        return
    left, right = st.columns([5, 1])
    left.caption(f"**Not converged: continue.** {note}")
    mine = not ss.get("search_watching") and job.inputs_key == C.inputs_key()
    right.button(f"Continue (+{job.continue_step:,})", key="continue_search", disabled=not mine,
                 on_click=continue_search, width="stretch",
                 help=f"Go on with this search from where it stopped, with {job.continue_step:,} more evaluations: "
                      "the front a search with the larger budget would have found." if mine else
                      "Only your own search on the current inputs can be continued.")


def continue_search() -> None:
    """The Continue button: the session's search goes on from its saved state (an error message instead when it
    cannot, or the session's allowance is spent)."""
    job = ss["search_job"]
    ss.pop("search_refused", None)
    try:
        _with_current_job().check(job.continue_step)
        after = job.continued(job.continue_step)
        if after.budget_evals > MAX_EVALS:
            raise FabricError(f"a continued budget of {after.budget_evals:,} evaluations is above the page's "
                              f"{MAX_EVALS:,}: start a new search instead")
    except FabricError as err:
        ss["search_refused"] = C.public_message(err)
        return
    ss["search_evals"] = after.budget_evals         # the budget is part of the inputs: the front stays current
    after.inputs_key = C.inputs_key()
    _adopt(after)


def recommendation_box(res, cons) -> None:
    """The recommended design, the rule that chose it and its ties, with a button to open it."""
    advice = recommend(res.front, res.baselines, p99_target_s=cons.p99_target_s)
    rec = advice.record
    if rec is None:
        return
    tie = ties_text(rec, res.ties().get(rec.get("key"), []))
    box = st.container(border=True)
    left, right = box.columns([6, 1])
    left.markdown(f"**★ Recommended: {C.md_text(repr(rec['design']))}**: " + C.md_text(
        f"network capex ${rec['cost_usd']:,.0f}, {'robust ' if rec.get('p99_by_case') else ''}p99 "
        f"{time_text(rec['p99_s'])}; {advice.rule}"
        + (f"; it {tie}, and the tie rule keeps {TIE_RULE.split(':')[0]} (column 'ties')" if tie else "") + "."
        + _plan_cost(rec, res)), help=f"Tie rule: {TIE_RULE}.")
    if right.button("Open ★ design", key="open_star", width="stretch"):
        C.select_design(C.genes_of_record(rec), rec["design"])
        st.switch_page(C.PAGE_FILES["design"])


def _plan_objective_of(job):
    """The plan objective the job searched with (plan space auto), or None."""
    workload = getattr(job, "workload", None)
    return workload if plans_view.is_plan_objective(workload) else None


def _plan_cost(rec: dict, res) -> str:
    """" " + what the recommended design's plan costs (the CLI's sentence), or "" without a plan search."""
    objective = _plan_objective_of(ss.get("search_job"))
    if objective is None or not rec.get("plan"):
        return ""
    line = plans_view.plan_sentence_of(rec["design"], res.front, objective)
    return " " + (line or f"It is judged at its best plan, {rec['plan']}.")


def _robust_mode(job) -> str:
    """"worst case" or "weighted mean" of the job's robust objective."""
    return robust_view.MODE_TEXT[getattr(getattr(job, "workload", None), "mode", "worst")]


def draw_case_fronts(res) -> None:
    """The robust front beside each case's own front: sentences, one panel per case, a table."""
    from fabric.search.robust import robust_lines

    st.subheader("The robust front against each case's own front")
    st.markdown("\n".join(f"- {C.md_text(line)}" for line in robust_lines(res)))
    fig = robust_view.case_fronts_figure(res)
    st.plotly_chart(fig, width="stretch", theme=None, key="case_fronts")
    st.caption("One panel per case (workload|scenario): network capex (USD) against the p99 on that case (the unit "
               "on each panel's axis). Grey dotted line: the case's own front among the designs the search "
               "evaluated (what a search for that case alone would keep); coloured dots: the robust front's designs "
               "on that case, outlined in black when also on the case's own front.")
    table = robust_view.case_front_table(res)
    st.dataframe(table, hide_index=True, width="stretch", key="case_front_table",
                 column_config={"fastest p99, own front (s)": st.column_config.NumberColumn(format="%.4g"),
                                "fastest p99, robust front (s)": st.column_config.NumberColumn(format="%.4g"),
                                "robust front slower by": st.column_config.NumberColumn(format="percent"),
                                "cheapest, own front (USD)": st.column_config.NumberColumn(format="dollar")})
    st.caption("Per case: the designs on its own front and how many of them the robust front kept, and the fastest "
               "p99 on that case of each front (seconds): what holding up on every case costs on this one.")


@st.fragment(run_every=0.5)
def live_panel() -> None:
    """The running search's progress, redrawn twice a second; once it ends, a full-page rerun draws the result."""
    ss["search_job"].touch()
    snap = ss["search_job"].snapshot()
    if not snap.running:
        st.rerun()
    draw(snap, live=True)


snap = job.snapshot()
if snap.running:
    live_panel()
else:
    if job.inputs_key != C.inputs_key(evals=job.budget_evals):
        st.warning("The inputs changed since this front was computed: it is the front of "
                   + C.md_text(f"{job.label or 'an earlier search'} on {job.constraints.gpus:,} "
                               f"{job.constraints.gpu_model} GPUs")
                   + " (the workload, job mix, plan space, constraints, GPU, catalog, calibration or seed changed "
                     "since). Its figures are that search's; the Design, Compare and Brief pages do not offer its "
                     "designs. Press **Start search** to search these inputs.")
    elif job.inputs_key != C.inputs_key():
        st.caption("The evaluation budget changed since this front was computed; the front is the one of the "
                   "budget it ran with.")
    draw(snap, live=False)

C.sync_url()
