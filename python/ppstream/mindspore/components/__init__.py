"""Training components, one concern per file (like torchtitan's ``components/``).

``lr_schedule`` (warm-up + constant / linear / cosine decay, Megatron-LM's
OptimizerParamScheduler), ``clipping`` (global gradient-norm clipping over every stage and
shard), ``loss_scale`` (dynamic loss scaling for float16), ``precision`` (the dtype of the
HSDP collectives), ``opt_step`` (what ``OPT_STEP`` does: unscale, check, clip, schedule,
AdamW), ``checkpoint`` (sharded save / resume), ``evaluate`` (held-out loss every N steps).
The rank runtime composes them; each reads its settings from the run config's ``train:``
section (docs/config.md, "train: section").
"""
