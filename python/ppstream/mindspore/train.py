"""``python -m ppstream.mindspore.train CONFIG …``: the entry point ``ppstream train`` execs.

The launcher itself is ``ppstream.mindspore.launch.cli`` (see its docstring for the options).
"""
from __future__ import annotations

import sys

from ppstream.mindspore.launch.cli import main

if __name__ == "__main__":
    sys.exit(main())
