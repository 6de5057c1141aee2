"""The device platforms behind one interface (``base.Platform``): CPU, Ascend, the in-process fake,
and the recording / straggler wrappers; ``holds``: the buffers side-stream communication keeps alive."""
