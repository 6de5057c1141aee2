"""ppstream.whatif through Python: the ST trace's figures against the artifact's result, the
counterfactual, errors; the artifact's parquet tables (pyarrow, optional) against the timelines."""
import json
import pathlib
import sys

import pytest

import ppstream

DATA = pathlib.Path(__file__).resolve().parents[1] / "data" / "whatif"
ST = str(DATA / "timeline-ST.json.gz")


def test_st_slowdown_and_worst_stage_match_the_artifact(tmp_path):
    svg, trace = tmp_path / "h.svg", tmp_path / "ideal.json"
    r = ppstream.whatif([ST], svg=svg, trace=trace, progress=False)
    theirs = json.loads((DATA / "result-ST.json").read_text())
    assert r["slowdown"] == pytest.approx(theirs["blocking_slowdown"], rel=0.01)
    stages = theirs["blocking_decompose_by_stage"]
    assert max(r["by_stage"], key=r["by_stage"].get) == max(stages, key=stages.get)
    assert len(r["steps"]) == len(theirs["step_t_base"])
    assert svg.read_text().startswith("<svg")
    assert json.loads(trace.read_text())["traceEvents"]


def test_steps_limit_the_analysis():
    r = ppstream.whatif(ST, steps=(23, 34), progress=False)
    assert [s["step"] for s in r["steps"]] == [23, 25, 33, 34]


def test_reduce_grad_predicts_the_step_and_progress_counts_every_simulation():
    seen = []
    r = ppstream.whatif(ST, reduce_grad="async", steps=(23, 25), progress=lambda done, total: seen.append((done, total)))
    p = r["predicted_step_ms"]
    assert p["policy"] == "async" and len(p["per_step_ms"]) == 2
    assert 0 < p["measured_costs_ms"] and 0 < p["ideal_costs_ms"]
    assert "predicted_step_ms" not in ppstream.whatif(ST, steps=(23, 25), progress=False)
    assert seen and seen[-1][0] == seen[-1][1] and [d for d, _ in seen] == list(range(1, len(seen) + 1))


def test_bad_input_raises_value_error():
    with pytest.raises(ValueError, match="no such file|cannot open|nope"):
        ppstream.whatif([str(DATA / "nope.json.gz")])
    with pytest.raises(ValueError, match="agg"):
        ppstream.whatif(ST, agg="max")
    with pytest.raises(ValueError, match="reduce_grad"):
        ppstream.whatif(ST, reduce_grad="later")
    with pytest.raises(ppstream.LiftError, match="no timer op"):
        ppstream.whatif(ST, steps=(100000, 100001))
    with pytest.raises(ValueError, match="one kind"):
        ppstream.whatif([ST, str(DATA / "trace-ST.parquet")])


def test_a_parquet_table_without_pyarrow_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow now raises ImportError
    with pytest.raises(ImportError, match=r"ppstream\[parquet\]"):
        ppstream.whatif(str(DATA / "trace-ST.parquet"))


# -- the artifact's parquet tables ----------------------------------------------------------
# The tables store times as float32 seconds (the artifact's own files), the timelines as µs
# decimals written from them, so the two inputs agree to float32 precision, not bitwise.
FIGURE_REL = 1e-5


def figures(r):
    out = {"slowdown": r["slowdown"]}
    for k in ("by_dp_rank", "by_stage", "by_op_type"):
        out.update({f"{k}.{label}": v for label, v in r[k].items()})
    out.update({f"step {s['step']} slowdown": s["slowdown"] for s in r["steps"]})
    return out


@pytest.mark.parametrize("name", ["AR", "ST"])
def test_parquet_table_gives_the_timeline_figures(name):
    pytest.importorskip("pyarrow", reason="pyarrow not installed (optional: pip install 'ppstream[parquet]')")
    tl = ppstream.whatif(str(DATA / f"timeline-{name}.json.gz"), progress=False)
    pq = ppstream.whatif(str(DATA / f"trace-{name}.parquet"), progress=False)
    a, b = figures(tl), figures(pq)
    assert a.keys() == b.keys()
    for k in a:
        assert b[k] == pytest.approx(a[k], rel=FIGURE_REL), k
    assert pq["m_w"] == pytest.approx(tl["m_w"], abs=1e-5) and pq["m_s"] == pytest.approx(tl["m_s"], abs=1e-5)
    for k in ("by_dp_rank", "by_stage", "by_op_type"):
        assert max(pq[k], key=pq[k].get) == max(tl[k], key=tl[k].get), k
    assert (pq["dp"], pq["pp"], pq["ops"]) == (tl["dp"], tl["pp"], tl["ops"])
    # and the artifact's own result, computed from this table
    theirs = json.loads((DATA / f"result-{name}.json").read_text())
    assert pq["slowdown"] == pytest.approx(theirs["blocking_slowdown"], rel=1e-6)
    for label, v in theirs["blocking_decompose_by_stage"].items():
        assert pq["by_stage"][str(label)] == pytest.approx(v, rel=1e-6)
    # the table has each op's own start (the timeline: communication from its group's last
    # arrival), so its launch slowdown is the artifact's
    assert pq["launch_slowdown"] == pytest.approx(theirs["launch_slowdown"], rel=1e-6)


def _write(table, path):
    import pyarrow.parquet as pq
    pq.write_table(table, path)
    return str(path)


def test_parquet_errors_name_the_file_the_row_and_the_column(tmp_path):
    pa = pytest.importorskip("pyarrow", reason="pyarrow not installed (optional: pip install 'ppstream[parquet]')")
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    t = pq.read_table(DATA / "trace-ST.parquet")
    with pytest.raises(ValueError, match=r"x\.parquet: no column seq_id"):
        ppstream.whatif(_write(t.drop_columns(["seq_id"]), tmp_path / "x.parquet"))
    dur = t.column("duration").to_numpy().copy()
    dur[7] = -0.5
    bad = t.set_column(t.schema.get_field_index("duration"), "duration", pa.array(dur))
    with pytest.raises(ppstream.TraceError, match=r"neg\.parquet: row 7: column duration: -0\.5 s"):
        ppstream.whatif(_write(bad, tmp_path / "neg.parquet"))
    nulls = t.set_column(t.schema.get_field_index("step"), "step",
                         pc.if_else(pc.equal(pa.array(range(t.num_rows)), 3), pa.scalar(None, pa.int64()), t.column("step")))
    with pytest.raises(ValueError, match=r"null\.parquet: column step: 1 null"):
        ppstream.whatif(_write(nulls, tmp_path / "null.parquet"))
    text = t.set_column(t.schema.get_field_index("mc"), "mc", pc.cast(t.column("mc"), pa.string()))
    with pytest.raises(ValueError, match=r"column mc: type string; expected integers"):
        ppstream.whatif(_write(text, tmp_path / "s.parquet"))
    one_dp = t.filter(pc.not_equal(t.column("dp_rank"), 1))  # a row of DP rank 0 without its DP rank 1 twin
    mixed = pa.concat_tables([one_dp, t.filter(pc.equal(t.column("dp_rank"), 1)).slice(1)])
    with pytest.raises(ppstream.LiftError, match="DP rank 1, stage"):
        ppstream.whatif(_write(mixed, tmp_path / "missing.parquet"))


def test_an_unwritable_svg_or_trace_is_an_oserror_naming_the_path(tmp_path):
    # docs/whatif.md: OSError (errno, path) when svg= or trace= cannot be written.
    import errno
    missing = tmp_path / "no-such-dir" / "h.svg"
    with pytest.raises(OSError) as e:
        ppstream.whatif(ST, steps=(23, 25), svg=missing, progress=False)
    assert e.value.errno == errno.ENOENT and e.value.filename == str(missing)
    with pytest.raises(IsADirectoryError) as e:
        ppstream.whatif(ST, steps=(23, 25), trace=tmp_path, progress=False)
    assert e.value.filename == str(tmp_path)
