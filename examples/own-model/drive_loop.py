"""Drive the training loop yourself: ppstream.mindspore.Pipeline runs every rank of the config's
layout in this process (the in-process fake platform) and takes your global batches.

    PYTHONPATH=python python examples/own-model/drive_loop.py   (from a checkout; or with ppstream installed)
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # regressor.py

from ppstream.mindspore import Pipeline  # noqa: E402

import regressor  # noqa: E402

pipe = Pipeline(os.path.join(HERE, "pp2-vpp2-hsdp.yaml"))
data = regressor.batches(pipe.train_cfg)  # any iterable of (x, y) with pipe.global_batch_size rows
for step in range(3):
    print(f"step {step}: loss {pipe.step(next(data)):.6f}")
print(f"{len(pipe.parameters())} parameter tensors")
