"""StepProfiler: MindSpore's own profiler on a rank, driven by the step loop (``train --profile``).

Wraps ``mindspore.profiler.profile`` with a ``schedule`` so that ``step()`` takes effect: the
first step (compilation, warm-up) is skipped, the remaining steps are recorded
(``skip_first=1, wait=0, warmup=0, active=steps-1, repeat=1``; with one step, that step).
``tensorboard_trace_handler(DIR, worker_name="rank{r}")`` writes
``DIR/rank{r}_*_ascend_ms/ASCEND_PROFILER_OUTPUT/trace_view.json`` — on CPU a "CPU OP" process
of op slices, the same layout as on Ascend. Disabled, every method is a no-op.
"""
from __future__ import annotations


def profile_schedule(steps: int) -> dict:
    """The schedule arguments for a run of ``steps`` steps (see the module doc)."""
    if steps < 1:
        raise ValueError(f"profiling needs at least one step, got {steps}")
    if steps == 1:
        return {"skip_first": 0, "wait": 0, "warmup": 0, "active": 1, "repeat": 1}
    return {"skip_first": 1, "wait": 0, "warmup": 0, "active": steps - 1, "repeat": 1}


class StepProfiler:

    def __init__(self, out_dir: str | None, steps: int, rank: int):
        self.prof = None
        if out_dir is None:
            return
        from mindspore.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler
        import mindspore as ms
        activities = [ProfilerActivity.CPU]
        if ms.get_context("device_target") == "Ascend":
            activities.append(ProfilerActivity.NPU)
        self.prof = profile(activities=activities, schedule=schedule(**profile_schedule(steps)),
                            on_trace_ready=tensorboard_trace_handler(out_dir, worker_name=f"rank{rank}"))

    def step(self) -> None:
        if self.prof is not None:
            self.prof.step()

    def stop(self) -> None:
        if self.prof is not None:
            self.prof.stop()
            self.prof = None
