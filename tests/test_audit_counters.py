"""Counter readers, the port map, busy-window utilisation and the hot-link comparison (issue 26 stage 3).

Expected values are worked out by hand in each test from the counter values written in it.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabric.audit.counters import field_of_metric, increase, read_counter_files, read_counters
from fabric.audit.hotlinks import spearman
from fabric.audit.portmap import mapping_template, read_port_map
from fabric.audit.utilisation import measure_links
from fabric.reference.presets import preset_design
from fabric.errors import FabricError, ParseError
from fabric.topology import build_fabric
from tests.conftest import fuzz_deadline, fuzz_examples


@pytest.fixture(scope="module")
def fabric256():
    return build_fabric(preset_design("fat-tree", 256))    # 8 leaves, 4 spines, 8 cables per leaf-spine pair


def test_metric_names_map_to_fields():
    assert field_of_metric("node_network_transmit_bytes_total") == "bytes"
    assert field_of_metric("ifHCOutOctets") == "bytes"
    assert field_of_metric("tx_bytes_phy") == "bytes"
    assert field_of_metric("node_network_receive_bytes_total") is None      # receive: the other end's transmit
    assert field_of_metric("np_ecn_marked_roce_packets") == "ecn_marks"
    assert field_of_metric("rx_pause_ctrl_phy") == "pause_frames"
    assert field_of_metric("tx_pause_ctrl_phy") is None                    # pauses sent: ingress congestion
    assert field_of_metric("node_network_transmit_drop_total") == "drops"
    assert field_of_metric("ifOutDiscards") == "drops"
    assert field_of_metric("ifHighSpeed") == "speed_bps"
    assert field_of_metric("node_network_speed_bytes") == "speed_bps"
    assert field_of_metric("node_cpu_seconds_total") is None


def test_increase_counts_a_reset_from_zero():
    pts = [(0.0, 100.0), (1.0, 300.0), (2.0, 50.0), (3.0, 150.0)]
    assert increase(pts, 0.0, 3.0) == 200 + 50 + 100
    assert increase(pts, 1.0, 2.0) == 50
    assert increase(pts, 0.5, 2.0) is None          # no sample at 0.5


def test_prometheus_text_with_timestamps_labels_and_speed():
    text = (
        "# HELP node_network_transmit_bytes_total bytes\n"
        "# TYPE node_network_transmit_bytes_total counter\n"
        'node_network_transmit_bytes_total{instance="leaf0",device="swp1"} 1000 1700000000000\n'
        'node_network_transmit_bytes_total{instance="leaf0",device="swp1"} 5000 1700000001000\n'
        'node_network_transmit_bytes_total{device="swp2",instance="leaf0",extra="a \\"q\\" b"} 7 1700000001000\n'
        'ifHighSpeed{instance="leaf0",ifName="swp1"} 400000 1700000001000\n'
        'rx_pause_ctrl_phy{instance="leaf0",device="swp1"} 3 1700000001000\n'
        'node_network_receive_bytes_total{instance="leaf0",device="swp1"} 9 1700000001000\n')
    c = read_counters("scrape.prom", text.encode())
    s = c.series[("leaf0", "swp1")]
    assert s["bytes"] == [(1700000000.0, 1000.0), (1700000001.0, 5000.0)]
    assert s["speed_bps"] == [(1700000001.0, 400e9)]             # ifHighSpeed is in Mb/s
    assert s["pause_frames"] == [(1700000001.0, 3.0)]
    assert c.series[("leaf0", "swp2")]["bytes"] == [(1700000001.0, 7.0)]
    assert any("node_network_receive_bytes_total" in n for n in c.notes)


@pytest.mark.parametrize("line, msg", [
    ('tx_bytes{switch="a",port="b"} 5', "without a timestamp"),
    ('tx_bytes{switch="a",port="b"} x 1000', "not a Prometheus sample line"),
    ('tx_bytes{switch="a",port="b"} NaN 1000', "not a finite number"),
    ('tx_bytes{switch="a"} 5 1000', "no port label"),
    ('tx_bytes{switch="a",port="b"} -5 1000', "is negative"),
    ('tx_bytes{switch="a",port=b} 5 1000', "bad label set"),
    ("what is this", "not a Prometheus sample line"),
])
def test_prometheus_text_errors_name_file_and_line(line, msg):
    with pytest.raises(ParseError, match=msg) as e:
        read_counters("s.prom", ("# ok\n" + line + "\n").encode())
    assert "s.prom:2" in str(e.value)


def _matrix(results, rtype="matrix"):
    return json.dumps({"status": "success", "data": {"resultType": rtype, "result": results}}).encode()


def test_prometheus_json_range_query():
    raw = _matrix([
        {"metric": {"__name__": "ifHCOutOctets", "sysName": "spine0", "ifName": "Ethernet8"},
         "values": [[1700000000, "10"], [1700000015, "1000000010"]]},
        {"metric": {"__name__": "np_ecn_marked_roce_packets", "switch": "spine0", "port": "Ethernet8"},
         "values": [[1700000000, "0"], [1700000015, "42"]]},
        {"metric": {"__name__": "up", "instance": "x"}, "values": [[1700000000, "1"]]},
    ])
    c = read_counters("q.json", raw)
    s = c.series[("spine0", "Ethernet8")]
    assert increase(s["bytes"], 1700000000, 1700000015) == 1e9
    assert s["ecn_marks"][-1] == (1700000015.0, 42.0)


@pytest.mark.parametrize("doc, msg, where", [
    ({"status": "success", "data": {"resultType": "scalar", "result": []}}, "resultType 'scalar'",
     "data.resultType"),
    ({"status": "error", "error": "bad query", "data": {}}, "status 'error'", "status"),
    ({"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {"port": "p"},
                                                                      "values": []}]}},
     "without __name__", "data.result[0]"),
    ({"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"__name__": "tx_bytes", "switch": "s", "port": "p"}, "values": [[1, "1"], [2, "NaN"]]}]}},
     "not a finite number", "data.result[0].values[1]"),
])
def test_prometheus_json_errors_name_the_path(doc, msg, where):
    with pytest.raises(ParseError, match=msg) as e:
        read_counters("q.json", json.dumps(doc).encode())
    assert where in str(e.value)


def test_csv_iso_timestamps_empty_cells_and_errors():
    text = ("timestamp,switch,port,bytes,ecn_marks,pause_frames,drops\n"
            "2026-01-01T00:00:00Z,leaf0,p1,0,0,,0\n"
            "2026-01-01T00:00:10Z,leaf0,p1,2500,4,,1\n")
    c = read_counters("c.csv", text.encode())
    s = c.series[("leaf0", "p1")]
    assert increase(s["bytes"], s["bytes"][0][0], s["bytes"][1][0]) == 2500
    assert s["bytes"][1][0] - s["bytes"][0][0] == 10.0
    assert "pause_frames" not in s                        # empty cells: not reported
    assert any("no speed_bps column" in n for n in c.notes)
    with pytest.raises(ParseError, match=r"c.csv:1.*lacks bytes"):
        read_counters("c.csv", b"timestamp,switch,port\n1,a,b\n")
    with pytest.raises(ParseError, match=r"c.csv:3 ecn_marks.*'lots' is not a number"):
        read_counters("c.csv", b"timestamp,switch,port,bytes,ecn_marks\n1,a,b,0,0\n2,a,b,5,lots\n")
    with pytest.raises(ParseError, match=r"c.csv:2 timestamp.*no time zone"):
        read_counters("c.csv", b"timestamp,switch,port,bytes\n2026-01-01T00:00:00,a,b,0\n")
    with pytest.raises(ParseError, match=r"c.csv:2.*3 cells, the header has 4"):
        read_counters("c.csv", b"timestamp,switch,port,bytes\n1,a,b\n")
    with pytest.raises(ParseError, match="given twice with different values"):
        read_counters("c.csv", b"timestamp,switch,port,bytes\n1,a,b,0\n1,a,b,5\n")
    with pytest.raises(FabricError, match="no counter file"):
        read_counter_files([])


def test_port_map_checks_names_and_cables(fabric256):
    ok = b"switch,port,link\nsw-l0,e1,leaf0-spine0\nsw-s0,e9,spine0-leaf0\n,,leaf0-spine1\n"
    m = read_port_map("map.csv", ok, fabric256)
    assert m == {("sw-l0", "e1"): "leaf0-spine0", ("sw-s0", "e9"): "spine0-leaf0"}
    with pytest.raises(ParseError, match=r"map.csv:2.*'leaf0-core9' is not a switch-to-switch link"):
        read_port_map("map.csv", b"switch,port,link\na,b,leaf0-core9\n", fabric256)
    nine = "switch,port,link\n" + "".join(f"a,e{i},leaf0-spine0\n" for i in range(9))
    with pytest.raises(ParseError, match=r"map.csv:10.*more ports map to leaf0-spine0 than the 8 cable"):
        read_port_map("map.csv", nine.encode(), fabric256)
    with pytest.raises(ParseError, match="mapped twice"):
        read_port_map("map.csv", b"switch,port,link\na,b,leaf0-spine0\na,b,leaf0-spine1\n", fabric256)
    tpl = mapping_template(fabric256)
    assert tpl.count(",,leaf0-spine0\n") == 8 and tpl.count("\n") == 1 + 8 * 4 * 2 * 8


def test_busy_window_utilisation_by_hand(fabric256):
    # two cables of leaf0-spine0 (400 Gb/s each) and one of spine0-leaf0, sampled every 10 s:
    # 0-10 s idle, 10-20 s and 20-30 s busy, 30-40 s almost idle (below half the busiest interval's rate)
    rows = ["timestamp,switch,port,bytes,ecn_marks,pause_frames,drops,speed_bps"]
    a = [0, 0, 2.5e11, 5.0e11, 5.1e11]          # 250 GB per 10 s = 200 Gb/s: 50 % of 400 Gb/s
    b = [0, 0, 5.0e11, 1.0e12, 1.0e12]          # 400 Gb/s: 100 %
    c = [0, 0, 1.0e11, 2.0e11, 2.0e11]          # 80 Gb/s of a 100 Gb/s reported speed: 80 %
    ecn = [0, 0, 10, 30, 30]
    for i in range(5):
        t = 100 + 10 * i
        rows.append(f"{t},L0,a1,{a[i]:.0f},{ecn[i]},,0,400000000000")
        rows.append(f"{t},L0,a2,{b[i]:.0f},0,,0,400000000000")
        rows.append(f"{t},S0,c1,{c[i]:.0f},,,,100000000000")
    counters = read_counters("c.csv", ("\n".join(rows) + "\n").encode())
    pmap = read_port_map("m.csv", b"switch,port,link\nL0,a1,leaf0-spine0\nL0,a2,leaf0-spine0\nS0,c1,spine0-leaf0\n"
                                  b"S0,c9,spine0-leaf1\n", fabric256)
    m = measure_links(counters, pmap, fabric256)
    assert m.busy_windows == ((110.0, 120.0), (120.0, 130.0))
    up = m.links["leaf0-spine0"]
    assert up.busy_s == 20.0 and up.ports == 2
    assert up.utilisation == pytest.approx((5.0e11 + 1.0e12) * 8 / (800e9 * 20))       # 75 %
    assert up.ecn_per_s == pytest.approx(30 / 20)
    assert up.pause_per_s is None                                                       # never reported
    assert up.partial == "2 of 8 cable(s) mapped"
    down = m.links["spine0-leaf0"]
    assert down.speed_bps == 100e9 and down.slow
    assert down.utilisation == pytest.approx(2.0e11 * 8 / (100e9 * 20))                # 80 %
    assert any("mapped port(s) have no byte counter" in n for n in m.notes)


def test_spearman_by_hand_and_against_scipy():
    from scipy.stats import spearmanr

    assert spearman([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(1 - 6 * 2 / (4 * 15))
    a, b = [0.1, 0.5, 0.5, 0.9, 0.2], [3, 1, 2, 5, 5]
    assert spearman(a, b) == pytest.approx(spearmanr(a, b).statistic)
    assert spearman([1, 2], [2, 1]) is None and spearman([1, 1, 1], [1, 2, 3]) is None


# ------------------------------------------------------------------ fuzz

_lines = st.lists(st.one_of(
    st.text(max_size=60),
    st.builds(lambda m, s, p, v, t: f'{m}{{switch="{s}",port="{p}"}} {v} {t}',
              st.sampled_from(["tx_bytes", "ifHCOutOctets", "rx_pause", "ecn_marked", "x"]),
              st.text("ab\"\\,=", max_size=4), st.text("p1{}", max_size=3),
              st.one_of(st.integers(-5, 10**15).map(str), st.sampled_from(["NaN", "+Inf", "1e400", ""])),
              st.one_of(st.integers(-10, 10**13).map(str), st.just("")))), max_size=8)


@settings(max_examples=fuzz_examples(200), deadline=fuzz_deadline(), suppress_health_check=[HealthCheck.too_slow])
@given(lines=_lines)
def test_fuzz_prometheus_text_only_clear_errors(lines):
    try:
        c = read_counters("f.prom", "\n".join(lines).encode())
    except FabricError:
        return
    for fields in c.series.values():
        for pts in fields.values():
            assert all(t == t and v >= 0 for t, v in pts)


_cells = st.one_of(st.integers(-3, 10**12).map(str), st.floats(allow_nan=True, allow_infinity=True).map(str),
                   st.text(",\"\n0123456789-:TZ.", max_size=12), st.just(""))


@settings(max_examples=fuzz_examples(200), deadline=fuzz_deadline(), suppress_health_check=[HealthCheck.too_slow])
@given(header=st.permutations(["timestamp", "switch", "port", "bytes", "ecn_marks", "pause_frames", "drops"]),
       rows=st.lists(st.lists(_cells, min_size=0, max_size=8), max_size=6))
def test_fuzz_counter_csv_only_clear_errors(header, rows):
    text = ",".join(header) + "\n" + "\n".join(",".join(r) for r in rows)
    try:
        read_counters("f.csv", text.encode())
    except FabricError:
        pass


@settings(max_examples=fuzz_examples(200), deadline=fuzz_deadline(), suppress_health_check=[HealthCheck.too_slow])
@given(doc=st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8)),
                        lambda kids: st.one_of(st.lists(kids, max_size=4),
                                               st.dictionaries(st.sampled_from(
                                                   ["status", "data", "resultType", "result", "metric", "values",
                                                    "value", "__name__", "switch", "port"]), kids, max_size=4)),
                        max_leaves=20))
def test_fuzz_prometheus_json_only_clear_errors(doc):
    wrapped = {"status": "success", "data": {"resultType": "matrix", "result": [doc]}}
    for d in (doc, wrapped):
        try:
            read_counters("f.json", json.dumps(d).encode())
        except FabricError:
            pass


def test_cli_mapping_template(tmp_path, capsys):
    from fabric.cli.main import main

    out = tmp_path / "m.csv"
    assert main(["audit", "--mapping-template", "-d", "fat-tree", "--gpus", "256", "--out", str(out)]) == 0
    assert "512 port row(s)" in capsys.readouterr().out          # 8 leaves x 4 spines x 8 cables x 2 directions
    lines = out.read_text().splitlines()
    assert lines[0] == "switch,port,link" and len(lines) == 1 + 512 and lines[1] == ",,leaf0-spine0"
    assert main(["audit", "--mapping-template", "-d", "fat-tree"]) == 2
    assert "--out" in capsys.readouterr().err
