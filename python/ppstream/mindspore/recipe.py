"""Recipe: a run's model and data, from the factories ``train.model`` and ``train.data`` name.

Both keys are ``MODULE:FUNCTION`` (``mymodels.mlp:build``), imported with the config file's
directory first on ``sys.path``, then ``PYTHONPATH`` (docs/config.md, "train"):

- ``train.model`` -> ``build(model_cfg) -> ModelParts`` (model/protocol.py). ``model_cfg`` is
  the config's ``model:`` section plus ``num_layers`` (the pipeline's layer count) and ``seed``
  (``train.seed``) where the section does not set them. ``mindspore.set_seed(train.seed)`` runs
  before every call, so MindSpore's initialisers give every rank and the baseline the same values.
- ``train.data`` -> ``batches(train_cfg) -> iterable of (inputs, labels)`` global batches
  (data/batches.py). ``train_cfg`` is the ``train:`` section plus ``global_batch_size``,
  ``micro_batch_num`` and ``model`` (the model_cfg above).
- ``train.eval_data`` (only with ``train.eval_every > 0``) -> ``batches(train_cfg)``, the same
  protocol: its first ``train.eval_batches`` global batches are the held-out set, read once and
  reused by every evaluation. Default ``""``: with the built-in text data, the held-out part of its
  corpus (``data.text:held_out_batches``); a user's ``train.data`` must name its own (runconfig.py
  refuses the run otherwise: ppstream cannot know which of a user's batches are unseen).

Defaults: the built-in MoE decoder (model/moe.py) and text data (data/text.py), through the same
protocol. ``check`` is the launcher's fail-fast: it imports both factories, builds the model,
reads the first batch and runs one forward, before any worker starts. Every error is a
``RecipeError`` naming the key.
"""
from __future__ import annotations

import importlib
import os
import re
import sys
from typing import Any, Callable

from ppstream.mindspore.runconfig import RunConfig

SPEC = re.compile(r"^([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*):([A-Za-z_]\w*)$")


class RecipeError(ValueError):
    """A factory that cannot be found, called, or whose result breaks the protocol; names the key."""


def load_factory(spec: Any, key: str, config_dir: str = "") -> Callable:
    """The function ``spec`` ("package.module:function") names; RecipeError naming ``key`` otherwise."""
    where = f"{key}={spec!r}"
    if not isinstance(spec, str) or not SPEC.match(spec):
        hint = " (for the built-in text data's corpus, set train.text: PATH)" if key == "train.data" else ""
        raise RecipeError(f"{where}: expected MODULE:FUNCTION, e.g. mymodels.mlp:build{hint}")
    mod_name, fn_name = SPEC.match(spec).groups()
    if config_dir and config_dir not in sys.path:
        sys.path.insert(0, config_dir)
    try:
        mod = importlib.import_module(mod_name)
    except ModuleNotFoundError as e:
        if e.name and mod_name.startswith(e.name):
            raise RecipeError(f"{where}: no module {e.name!r} in the config's directory or train.module_dir "
                              f"({config_dir or '-'}) or on PYTHONPATH") from None
        raise RecipeError(f"{where}: importing {mod_name} failed: {e}") from e
    except Exception as e:  # noqa: BLE001 - the user's module failed at import
        raise RecipeError(f"{where}: importing {mod_name} failed: {type(e).__name__}: {e}") from e
    fn = getattr(mod, fn_name, None)
    if fn is None:
        raise RecipeError(f"{where}: module {mod_name} ({getattr(mod, '__file__', '?')}) has no {fn_name!r}")
    if not callable(fn):
        raise RecipeError(f"{where}: {mod_name}.{fn_name} is a {type(fn).__name__}, not a function")
    return fn


def model_cfg_of(cfg: RunConfig) -> dict:
    """The dict ``build`` receives: the ``model:`` section + ``num_layers`` and ``seed`` (defaults)."""
    m = dict(cfg.model)
    if "num_layers" in m and m["num_layers"] != cfg.num_layers:
        raise RecipeError(f"model.num_layers={m['num_layers']} but the pipeline places {cfg.num_layers} layers; "
                          "drop model.num_layers (ppstream passes the pipeline's)")
    m.setdefault("num_layers", cfg.num_layers)
    m.setdefault("seed", cfg.train["seed"])
    return m


def data_cfg_of(cfg: RunConfig, dp: int) -> dict:
    """The dict the data factory receives (see the module doc)."""
    t = dict(cfg.train)
    t["global_batch_size"] = dp * cfg.micro_batch_num * cfg.train["micro_batch_size"]
    t["micro_batch_num"] = cfg.micro_batch_num
    t["model"] = model_cfg_of(cfg)
    return t


def build_parts(cfg: RunConfig):
    """The checked ModelParts of the whole model (every rank builds all parts, then keeps its own)."""
    import mindspore as ms

    from ppstream.mindspore.model.protocol import ModelProtocolError, check_parts

    where = f"train.model={cfg.train['model']!r}"
    build = load_factory(cfg.train["model"], "train.model", cfg.config_dir)
    ms.set_seed(int(cfg.train["seed"]))
    try:
        parts = build(model_cfg_of(cfg))
    except (RecipeError, ModelProtocolError):
        raise
    except Exception as e:  # noqa: BLE001 - the user's factory failed
        raise RecipeError(f"{where}: the factory raised {type(e).__name__}: {e}") from e
    parts = check_parts(parts, cfg.num_layers, where)
    for _name, cell in parts.parts():  # lazily initialised Parameters get their values now, in model order
        for p in cell.get_parameters():
            if getattr(p, "has_init", False):
                p.init_data()
    return parts


def _source(cfg: RunConfig, dp: int, key: str, spec: str):
    """The iterable the data factory ``spec`` (config key ``key``) returns; RecipeError naming it."""
    where = f"{key}={spec!r}"
    fn = load_factory(spec, key, cfg.config_dir)
    try:
        return fn(data_cfg_of(cfg, dp))
    except (RecipeError, FileNotFoundError, ValueError) as e:
        raise RecipeError(f"{where}: {e}") from e
    except Exception as e:  # noqa: BLE001 - the user's factory failed
        raise RecipeError(f"{where}: the factory raised {type(e).__name__}: {e}") from e


def open_data(cfg: RunConfig, dp: int):
    """GlobalBatches over the data factory's iterable, for a run with ``dp`` data-parallel ranks."""
    from ppstream.mindspore.data.batches import GlobalBatches

    spec = cfg.train["data"]
    return GlobalBatches(_source(cfg, dp, "train.data", spec), dp, cfg.micro_batch_num,
                         cfg.train["micro_batch_size"], f"train.data={spec!r}")


def eval_factory(cfg: RunConfig) -> str:
    """The held-out data factory's spec (``train.eval_data``, or the built-in text's held-out part)."""
    from ppstream.mindspore.runconfig import BUILTIN_EVAL_DATA
    return cfg.train["eval_data"] or BUILTIN_EVAL_DATA


def open_eval_data(cfg: RunConfig, dp: int):
    """HeldOutBatches of the first ``train.eval_batches`` batches of the eval factory, or None
    when evaluation is off (``train.eval_every: 0``)."""
    from ppstream.mindspore.data.batches import HeldOutBatches

    if int(cfg.train["eval_every"]) <= 0:
        return None
    spec = eval_factory(cfg)
    return HeldOutBatches(_source(cfg, dp, "train.eval_data", spec), dp, cfg.micro_batch_num,
                          cfg.train["micro_batch_size"], f"train.eval_data={spec!r}", int(cfg.train["eval_batches"]))


def to_tensor(a):
    """A numpy microbatch as a MindSpore tensor of the same dtype."""
    import mindspore as ms
    return ms.Tensor(a)


def check(cfg: RunConfig, dp: int, forward: bool = True):
    """The launcher's fail-fast: import both factories, build the model, read batch 0 and (with
    ``forward``) run one forward through every part. Returns the boundary (shape, dtype) or None.
    Raises RecipeError / ModelProtocolError / DataError, each naming the key."""
    from ppstream.mindspore.data.batches import DataError
    from ppstream.mindspore.model.protocol import probe

    parts = build_parts(cfg)
    data = open_data(cfg, dp)
    open_eval_data(cfg, dp)  # the held-out batches are read here too: a short eval set fails now
    try:
        x, y = data.microbatch(0, 0, 0)
    except DataError:
        raise
    except Exception as e:  # noqa: BLE001 - the user's iterator failed
        raise RecipeError(f"train.data={cfg.train['data']!r}: reading batch 0 raised {type(e).__name__}: {e}") from e
    if not forward:
        return None
    try:
        return probe(parts, to_tensor(x), to_tensor(y), f"train.model={cfg.train['model']!r}")
    except (ValueError, TypeError, RuntimeError) as e:
        from ppstream.mindspore.model.protocol import ModelProtocolError
        if isinstance(e, ModelProtocolError):
            raise
        raise RecipeError(f"train.model={cfg.train['model']!r}: one forward on batch 0 of train.data failed: "
                          f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}") from e
