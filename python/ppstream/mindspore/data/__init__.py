"""The data: the built-in byte-level text data (``text``)."""
