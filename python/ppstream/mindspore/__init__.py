"""ppstream.mindspore: executes ppstream stream programs with MindSpore PyNative.

One worker process per rank (launched by ``msrun``) runs its rank's verified program
instruction by instruction: compute (``F``/``B`` of a virtual stage), P2P batches, HSDP
collectives (``UNSHARD``/``RESHARD``/``REDUCE_GRAD``), events, and the optimizer. The
platform layer (``platforms/``) hides what the device can do; the executor never matches on device names. See docs/runtime.md.

Importing this package does not import MindSpore; the modules that need it do.
"""

from ppstream.mindspore.model.protocol import ModelParts  # noqa: E402  (no MindSpore import)

__all__ = ["ModelParts", "Pipeline"]


def __getattr__(name):
    if name == "Pipeline":  # imports MindSpore on first use only
        from ppstream.mindspore.training.pipeline import Pipeline
        return Pipeline
    raise AttributeError(f"module 'ppstream.mindspore' has no attribute {name!r}")
