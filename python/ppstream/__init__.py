"""ppstream: pipeline-parallel x HSDP stream programs.

The engine lives in C++ (``ppstream._core``): ``compile`` / ``compile_text`` turn a YAML
configuration into the verified per-rank stream programs (JSON, schema in
``include/ppstream/program/format.h``); ``verify`` checks a program set; ``to_text`` prints the
canonical text form. Semantics: ``docs/semantics.md``.
"""

from ppstream._core import (  # noqa: F401
    ConfigError,
    ParseError,
    compile,
    compile_text,
    to_json,
    to_text,
    verify,
    verify_text,
)

__all__ = ["ConfigError", "ParseError", "compile", "compile_text", "to_json", "to_text", "verify", "verify_text"]
