#!/usr/bin/env python3
"""Produce the small 2-rank MindSpore CPU profiler sample of tests/data/mindspore-cpu/.

Run under msrun (MindSpore's launcher; two CPU workers talking over MCCL):
    msrun --worker_num=2 --local_worker_num=2 --master_port=8129 --join=True \
        --log_dir=/tmp/ms_log scripts/make_ms_cpu_profile.py OUT_DIR
Each rank profiles two steps of: MatMul, ReLU, an all-reduce of the result, then rank 0 sends
a tensor to rank 1 (send / receive). mindspore.Profiler writes one
`*_ascend_ms/ASCEND_PROFILER_OUTPUT/trace_view.json` per rank with a "CPU OP" process.
"""
import sys

import mindspore as ms
import mindspore.mint.distributed as dist
import numpy as np
from mindspore import Profiler, Tensor, ops
from mindspore.communication import GlobalComm, create_group, get_rank, init

ms.set_context(mode=ms.PYNATIVE_MODE)
ms.set_device("CPU")
init()
if GlobalComm.WORLD_COMM_GROUP != "hccl_world_group":  # see python/ppstream/mindspore/platform_cpu.py
    create_group("hccl_world_group", [0, 1])
rank = get_rank()
prof = Profiler(output_path=sys.argv[1])
x = Tensor(np.full((32, 32), rank + 1, np.float32))
all_reduce = ops.AllReduce()
all_gather = ops.AllGather()
for _ in range(2):
    y = ops.relu(ops.matmul(x, x))
    y = all_reduce(y)
    g = all_gather(y)
    if rank == 0:
        dist.send(y, dst=1)
    else:
        z = ops.zeros((32, 32), ms.float32)
        dist.recv(z, src=0)
prof.stop()
prof.analyse()
