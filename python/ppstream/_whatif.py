"""``ppstream.whatif``: the straggler what-if of a job's trace from Python (docs/whatif.md).

The same analysis and result as ``ppstream whatif --json``: the engine does the work
(``ppstream._core``); this module picks the input path and reads the artifact's parquet table.

Inputs (``paths``):

- Megatron-LM timer timelines (``.json`` / ``.json.gz``, the artifact's timeline format);
- the artifact's parquet table (``.parquet``; needs pyarrow: ``pip install 'ppstream[parquet]'``):
  read here with pyarrow and handed to the engine as numpy columns, which become the same timer
  ops the timeline reader makes (``include/ppstream/analyze/timer_table.h``);
- one ppstream trace: ``simulate --trace T.json`` (with ``T.json.config.yaml``), a
  ``replay --trace DIR`` directory, or a ``ppstream train`` run directory (docs/whatif.md
  "Our traces").
"""
from __future__ import annotations

import json
import operator
import os
import sys
from typing import Any, Callable, Iterable, Union

import numpy as np

from ppstream import _core

PathLike = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]

# The artifact's table (its readme, "trace-<name>.parquet"): the columns read, by kind.
INT_COLUMNS = ("dp_rank", "stage", "step", "seq_id", "mc", "mb_id")
TIME_COLUMNS = ("start_ts", "duration")  # seconds
COLUMNS = INT_COLUMNS + ("optype",) + TIME_COLUMNS


def _pyarrow(path: str):
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq
    except ImportError as e:
        raise ImportError(f"ppstream.whatif: reading {path} needs pyarrow, an optional dependency: "
                          "pip install 'ppstream[parquet]' (or pass the trace's timeline JSON instead)") from e
    return pa, pc, pq


def read_parquet_table(path: PathLike) -> dict[str, Any]:
    """Reads the what-if artifact's parquet table at ``path`` into the columns ``_core.whatif_table``
    takes: ``{'source': path, 'dp_rank', 'stage', 'step', 'seq_id', 'mc', 'mb_id': int64[n],
    'optype': int32[n] (index into 'optype_names': list[str]), 'start_ts', 'duration': float64[n]
    (seconds)}`` with n the table's rows. The table's ``rank`` and ``gmc`` columns (derived from
    the others) are not read.

    Raises ImportError without pyarrow; ValueError naming the file and the column for a missing
    column, a null value, or a column of the wrong type (integers for the int columns, numbers
    for the times, strings or a dictionary of strings for optype); OSError for an unreadable file.
    """
    path = os.fspath(path)
    pa, pc, pq = _pyarrow(path)
    try:
        schema = pq.read_schema(path)
    except pa.ArrowInvalid as e:
        raise ValueError(f"{path}: not a parquet file: {e}") from None
    missing = [c for c in COLUMNS if c not in schema.names]
    if missing:
        raise ValueError(f"{path}: no column {', '.join(missing)} (the artifact's table has {', '.join(COLUMNS)}; "
                         f"this file has {', '.join(schema.names)})")
    table = pq.read_table(path, columns=list(COLUMNS))
    out: dict[str, Any] = {"source": path}
    for name in COLUMNS:
        col = table.column(name)
        if col.null_count:
            raise ValueError(f"{path}: column {name}: {col.null_count} null value(s); expected one per row")
        t = col.type
        if name in INT_COLUMNS:
            if not pa.types.is_integer(t):
                raise ValueError(f"{path}: column {name}: type {t}; expected integers")
            out[name] = np.ascontiguousarray(col.to_numpy(), dtype=np.int64)
        elif name in TIME_COLUMNS:
            if not (pa.types.is_floating(t) or pa.types.is_integer(t)):
                raise ValueError(f"{path}: column {name}: type {t}; expected seconds as numbers")
            out[name] = np.ascontiguousarray(col.to_numpy(), dtype=np.float64)
        else:
            values = t.value_type if pa.types.is_dictionary(t) else t
            if not (pa.types.is_string(values) or pa.types.is_large_string(values)):
                raise ValueError(f"{path}: column optype: type {t}; expected timer names (strings)")
            enc = pc.dictionary_encode(col.cast(pa.string())).combine_chunks()
            out["optype"] = np.ascontiguousarray(enc.indices.to_numpy(), dtype=np.int32)
            out["optype_names"] = enc.dictionary.to_pylist()
    return out


def _path(p: Any, name: str) -> str:
    """A str, bytes or os.PathLike as a str (os.fsdecode); any other type is a TypeError naming `name`."""
    if isinstance(p, (str, bytes, os.PathLike)):
        return os.fsdecode(p)
    raise TypeError(f"ppstream.whatif: {name}: expected a path (str, bytes or os.PathLike), not {type(p).__name__}")


def _paths(paths: Union[PathLike, Iterable[PathLike]]) -> list[str]:
    if isinstance(paths, (str, bytes, os.PathLike)):
        return [_path(paths, "paths")]
    try:
        items = list(paths)
    except TypeError:
        raise TypeError("ppstream.whatif: paths: expected a path (str, bytes or os.PathLike) or a list of paths, "
                        f"not {type(paths).__name__}") from None
    out = [_path(p, f"paths[{i}]") for i, p in enumerate(items)]
    if not out:
        raise ValueError("ppstream.whatif: no path given")
    return out


def whatif(paths: Union[PathLike, Iterable[PathLike]], reduce_grad: str | None = None, agg: str = "mean",
           steps: tuple[int, int] | int | None = None, *, svg: PathLike | None = None, trace: PathLike | None = None,
           progress: Union[bool, None, Callable[[int, int], Any]] = None) -> dict[str, Any]:
    """The straggler what-if of a job's trace (Lin et al., OSDI 2025; docs/whatif.md): returns the
    dict of ``ppstream whatif --json`` — ``slowdown`` (S, Eq. 1), ``by_dp_rank``, ``by_stage``,
    ``by_op_type`` (label → the slowdown that group alone causes), ``m_w``, ``m_s``, ``steps``
    (per step ``measured_ms``, ``resimulated_ms``, ``nodelay_ms``, ``ideal_ms``: times in ms),
    ``notes``, and with ``reduce_grad`` a ``predicted_step_ms`` (ms). For Megatron timelines the
    figures are the engine's on the lifted, verified stream programs (the CLI's default
    ``--evaluator engine``; docs/whatif.md "Evaluation on the engine").

    paths: a path or a list of paths: Megatron timer timelines (.json, .json.gz), parquet tables
        of the artifact (.parquet, every path then; needs pyarrow), or one ppstream trace (a
        simulate trace file, a replay --trace directory, a ``ppstream train`` run directory).
    reduce_grad: None, 'inline' or 'async': the counterfactual reduction placement.
    agg: 'mean' (compute by mean, communication by median: the artifact's rule) or 'median'.
    steps: (first, last), inclusive: analyse only those steps; an int N is (N, N), as ``--steps N``
        (an int is anything with ``__index__``, numpy integers too, but not a bool: docs/python.md).
    svg, trace: write the DP rank x stage heatmap / the ideal timeline (Megatron inputs) there.
    progress: None (a count on stderr when stderr is a terminal, as the CLI), True / False, or
        a callable(done, total) called after each of the analysis' simulations.

    Raises ValueError: ``ppstream.TraceError`` (malformed input: file and byte, or file, row and
    column of a table), ``ppstream.LiftError`` (a trace the lifting cannot pair: DP rank, stage,
    step and op), or a bad argument; ImportError for a parquet path without pyarrow; OSError
    (errno, path) when ``svg`` or ``trace`` cannot be written.
    """
    ps = _paths(paths)
    # An int (or any integer with __index__: numpy's) N is (N, N); a bool is left to the engine's
    # check, which refuses it, as every other type but None and a (first, last) pair.
    if hasattr(type(steps), "__index__") and not isinstance(steps, (bool, np.bool_)):
        steps = (operator.index(steps),) * 2
    if progress is None:
        progress = sys.stderr.isatty()
    args = dict(steps=steps, agg=agg, svg=None if svg is None else _path(svg, "svg"),
                trace=None if trace is None else _path(trace, "trace"), progress=progress, reduce_grad=reduce_grad)
    tables = [p for p in ps if p.endswith(".parquet")]
    if tables and len(tables) != len(ps):
        raise ValueError(f"ppstream.whatif: {len(tables)} parquet table(s) and {len(ps) - len(tables)} other path(s); "
                         "pass one kind (the tables of one job, or its timelines)")
    if tables:
        return json.loads(_core.whatif_table([read_parquet_table(p) for p in tables], **args))
    return json.loads(_core.whatif(ps, **args))
