"""ppstream.whatif through Python: the ST trace's figures against the artifact's result, errors."""
import json
import pathlib

import pytest

import ppstream

DATA = pathlib.Path(__file__).resolve().parents[1] / "data" / "whatif"


def test_st_slowdown_and_worst_stage_match_the_artifact(tmp_path):
    svg, trace = tmp_path / "h.svg", tmp_path / "ideal.json"
    r = json.loads(ppstream.whatif([str(DATA / "timeline-ST.json.gz")], svg=str(svg), trace=str(trace)))
    theirs = json.loads((DATA / "result-ST.json").read_text())
    assert r["slowdown"] == pytest.approx(theirs["blocking_slowdown"], rel=0.01)
    stages = theirs["blocking_decompose_by_stage"]
    assert max(r["by_stage"], key=r["by_stage"].get) == max(stages, key=stages.get)
    assert len(r["steps"]) == len(theirs["step_t_base"])
    assert svg.read_text().startswith("<svg")
    assert json.loads(trace.read_text())["traceEvents"]


def test_steps_limit_the_analysis():
    r = json.loads(ppstream.whatif([str(DATA / "timeline-ST.json.gz")], steps=(23, 34)))
    assert [s["step"] for s in r["steps"]] == [23, 25, 33, 34]


def test_bad_input_raises_value_error():
    with pytest.raises(ValueError, match="no such file|cannot open|nope"):
        ppstream.whatif([str(DATA / "nope.json.gz")])
    with pytest.raises(ValueError, match="agg"):
        ppstream.whatif([str(DATA / "timeline-ST.json.gz")], agg="max")
    with pytest.raises(ppstream.LiftError, match="no timer op"):
        ppstream.whatif([str(DATA / "timeline-ST.json.gz")], steps=(100000, 100001))
