"""The training loop and its components: a rank's runtime (``rank``), the program executor, the
pipeline stage, HSDP parameter state, the optimizer, host trace, profiler, and the single-process
reference (``baseline``)."""
