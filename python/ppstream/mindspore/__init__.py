"""ppstream.mindspore: executes ppstream stream programs with MindSpore PyNative.

One worker process per rank (launched by ``msrun``) runs its rank's verified program
instruction by instruction: compute (``F``/``B`` of a virtual stage), P2P batches, HSDP
collectives (``UNSHARD``/``RESHARD``/``REDUCE_GRAD``), events, and the optimizer. The
platform layer (``platforms/``) hides what the device can do; the executor never matches on device names. See docs/runtime.md.

Importing this package does not import MindSpore; the modules that need it do.
"""
