"""The model: the built-in MoE decoder (``moe``)."""
