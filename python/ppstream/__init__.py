"""ppstream: pipeline-parallel x HSDP stream programs.

The engine lives in C++ (``ppstream._core``): ``compile`` / ``compile_text`` turn a YAML
configuration into the verified per-rank stream programs (JSON, schema in
``include/ppstream/program/format.h``); ``verify`` checks a program set; ``to_text`` prints the
canonical text form; ``analyze`` / ``diff`` read real profiles (Ascend, Kineto) and our own
traces; ``whatif`` attributes a real job's straggler slowdown (docs/whatif.md; it returns a dict,
and reads the what-if artifact's parquet tables with ``read_parquet_table`` when pyarrow is
installed: ``pip install 'ppstream[parquet]'``). Semantics: ``docs/semantics.md``.
"""

from ppstream._core import (  # noqa: F401
    ConfigError,
    LiftError,
    ParseError,
    TraceError,
    VerifyError,
    analyze,
    compile,
    compile_text,
    diff,
    simulate,
    to_json,
    to_text,
    verify,
    verify_text,
)
from ppstream._whatif import read_parquet_table, whatif  # noqa: F401  (pyarrow only when a .parquet is read)

__all__ = [
    "ConfigError",
    "LiftError",
    "ParseError",
    "TraceError",
    "VerifyError",
    "analyze",
    "compile",
    "compile_text",
    "diff",
    "simulate",
    "to_json",
    "to_text",
    "verify",
    "read_parquet_table",
    "verify_text",
    "whatif",
]
