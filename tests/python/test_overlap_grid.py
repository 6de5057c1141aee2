"""Overlap flags never cost time, on the whole verify grid, through the installed (optimized)
module: turning pipeline_parallel_overlap_p2p or pipeline_parallel_overlap_b_f on never makes the
simulated step more than 0.5 % slower under the default cost model (issue 11). The gtest
OverlapNeverSlower.* runs a reduced grid in Debug; this is the full grid (about 1 min CPU in an
optimized build, 11,400 grid configurations folded into their flag-off keys)."""
from ppstream import _core


def test_overlap_flags_never_slower_on_the_whole_grid():
    res = _core.overlap_never_slower()
    assert res["configs"] > 4000
    assert res["comparisons"] == 4 * res["configs"]
    assert res["regressions"] == [], res["regressions"][:5]


def test_a_negative_tolerance_reports_every_pair():
    # The check can fail: asking every step to be 50 % faster flags every comparison.
    res = _core.overlap_never_slower(max_pp=2, max_vpp=1, max_microbatches=2, tolerance=-0.5)
    assert res["configs"] > 0
    assert len(res["regressions"]) == res["comparisons"]
    assert " ms -> " in res["regressions"][0]
