"""ppstream: pipeline-parallel x HSDP stream programs.

The engine lives in C++ (``ppstream._core``): ``compile`` / ``compile_text`` turn a YAML
configuration into the verified per-rank stream programs (JSON, schema in
``include/ppstream/program/format.h``); ``verify`` checks a program set; ``to_text`` prints the
canonical text form; ``analyze`` / ``diff`` read real profiles (Ascend, Kineto) and our own
traces. Semantics: ``docs/semantics.md``.
"""

from ppstream._core import (  # noqa: F401
    ConfigError,
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

__all__ = [
    "ConfigError",
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
    "verify_text",
]
