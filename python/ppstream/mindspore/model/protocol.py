"""ModelParts: the protocol a model follows to be trained by ppstream (docs/runtime.md, "Your own model").

A model factory ``build(model_cfg: dict) -> ModelParts`` returns the model cut at its layer
boundaries:

- ``first(inputs) -> h``: runs on the first virtual stage, before layer 0 (an embedding, a
  stem); ``inputs`` is one microbatch of the data's inputs, any dtype (integer tokens for an
  ``nn.Embedding`` are fine: no gradient flows into the data);
- ``layers[i](h) -> h``: layer i (``len(layers)`` must equal the config's ``num_layers``);
  the pipeline places layers on virtual stages by the config's layer → stage map;
- ``last(h, labels) -> loss``: runs on the last virtual stage after the last layer; returns a
  scalar, the mean loss over the microbatch.

Every part is a ``mindspore.nn.Cell``. What crosses a stage boundary is ``h``: **one** tensor
whose shape and dtype are the same after ``first`` and after every layer (receive buffers are
allocated from it); ppstream finds them by running ``first`` on a microbatch (``boundary_of``),
never from the config. Refused, each with a message saying why (``ModelProtocolError``): a part
that is not a Cell, a wrong number of layers, a part returning several tensors (a tuple or list),
a layer changing the boundary's shape or dtype, a loss that is not a scalar, and a parameter
object shared by two parts (tied / shared weights across stages: each stage owns and updates its
own parameters, so tying would silently untie them).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Sequence


class ModelProtocolError(ValueError):
    """The model factory's result does not follow the protocol; the message says which rule."""


@dataclasses.dataclass
class ModelParts:
    """A model cut at its layer boundaries: ``first``, ``layers`` (one Cell per layer), ``last``."""

    first: Any
    layers: Sequence[Any]
    last: Any

    def parts(self) -> list[tuple[str, Any]]:
        """(part name, Cell) in model order: ``first``, ``layers.0`` … ``layers.N-1``, ``last``."""
        return [("first", self.first)] + [(f"layers.{i}", c) for i, c in enumerate(self.layers)] + \
            [("last", self.last)]


def check_parts(parts: Any, num_layers: int, where: str) -> ModelParts:
    """``parts`` if it follows the static rules (types, layer count, no shared parameters); else
    raises ModelProtocolError naming ``where`` (the config key, e.g. ``train.model=pkg.mod:build``)."""
    from mindspore import nn

    if not isinstance(parts, ModelParts):
        raise ModelProtocolError(f"{where}: returned {type(parts).__name__}; expected "
                                 "ppstream.mindspore.ModelParts(first, layers, last)")
    parts = ModelParts(parts.first, list(parts.layers), parts.last)
    for name, cell in parts.parts():
        if not isinstance(cell, nn.Cell):
            raise ModelProtocolError(f"{where}: ModelParts.{name} is a {type(cell).__name__}; expected a mindspore.nn.Cell")
    if len(parts.layers) != num_layers:
        raise ModelProtocolError(f"{where}: ModelParts.layers has {len(parts.layers)} layers; the config's pipeline "
                                 f"places {num_layers} (the config's num_layers)")
    owner: dict[int, str] = {}
    for name, cell in parts.parts():
        for pname, p in cell.parameters_and_names():
            if id(p) in owner and owner[id(p)] != name:
                raise ModelProtocolError(
                    f"{where}: parameter {pname!r} is shared by ModelParts.{owner[id(p)]} and ModelParts.{name}; "
                    "ppstream cannot take tied or shared parameters across parts (each stage owns and updates "
                    "its own copy); untie them, e.g. give the output head its own weight")
            owner[id(p)] = name
    return parts


def named_parameters(name: str, cell) -> list[tuple[str, Any]]:
    """(global name, Parameter) of one part, in MindSpore's order: ``layers.3.`` + the name relative
    to the part (``layers.3.dense.weight``). The same on every rank and in the baseline."""
    return [(f"{name}.{n}", p) for n, p in cell.parameters_and_names()]


@dataclasses.dataclass(frozen=True)
class Boundary:
    """Shape and dtype of the tensor between stages (activation and its gradient)."""

    shape: tuple[int, ...]
    dtype: Any


def _one_tensor(out, what: str, where: str):
    import mindspore as ms
    if isinstance(out, (tuple, list)):
        raise ModelProtocolError(f"{where}: {what} returned {len(out)} tensors; ppstream passes exactly one tensor "
                                 "between stages (several boundary tensors are not supported: concatenate them)")
    if not isinstance(out, ms.Tensor):
        raise ModelProtocolError(f"{where}: {what} returned {type(out).__name__}; expected a mindspore.Tensor")
    return out


def boundary_of(parts: ModelParts, inputs, where: str) -> Boundary:
    """The boundary tensor's shape and dtype: ``first`` run once on one microbatch's inputs."""
    h = _one_tensor(parts.first(inputs), "ModelParts.first", where)
    return Boundary(tuple(h.shape), h.dtype)


def probe(parts: ModelParts, inputs, labels, where: str) -> Boundary:
    """One forward of the whole model on one microbatch, checking the rules that need values:
    one boundary tensor of one shape and dtype after ``first`` and every layer, a scalar loss.
    Returns the boundary. Raises ModelProtocolError."""
    h = _one_tensor(parts.first(inputs), "ModelParts.first", where)
    b = Boundary(tuple(h.shape), h.dtype)
    for i, layer in enumerate(parts.layers):
        h = _one_tensor(layer(h), f"ModelParts.layers[{i}]", where)
        if (tuple(h.shape), h.dtype) != (b.shape, b.dtype):
            raise ModelProtocolError(f"{where}: ModelParts.layers[{i}] returned {tuple(h.shape)} {h.dtype}; every "
                                     f"layer must keep the boundary of ModelParts.first, {b.shape} {b.dtype} "
                                     "(any layer can end a stage)")
    loss = _one_tensor(parts.last(h, labels), "ModelParts.last", where)
    if loss.size != 1:
        raise ModelProtocolError(f"{where}: ModelParts.last returned shape {tuple(loss.shape)}; expected a scalar "
                                 "loss (the mean over the microbatch)")
    return b
