"""RunConfig: what a training run needs beyond the stream programs (model, data, steps).

``train.model`` / ``train.data`` name the model and data factories (``MODULE:FUNCTION``,
recipe.py); with the built-in model the ``model:`` section's keys are checked against
MODEL_DEFAULTS, with the user's model it is passed to the factory as written.

The core keys (PP size, layers, DP mode, …) are validated by the C++ loader
(``ppstream._core.compile``); here we read only what the runtime needs from the same YAML:
the ``model:`` and ``train:`` sections and the layer → virtual-stage map.
"""
from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

import yaml

MODEL_DEFAULTS = {"hidden": 32, "heads": 2, "experts": 2, "top_k": 1, "ffn": 64, "seq_len": 32, "vocab": 256,
                  "dtype": "float32"}
BUILTIN_MODEL = "ppstream.mindspore.model.moe:build"
BUILTIN_DATA = "ppstream.mindspore.data.text:batches"
BUILTIN_EVAL_DATA = "ppstream.mindspore.data.text:held_out_batches"  # train.eval_data's default with BUILTIN_DATA
MODEL_DTYPES = ("float32", "float16", "bfloat16")
CPU_DTYPES = ("float32", "float16")  # MindSpore 2.10's CPU MatMul has no bfloat16 kernel (checked)
TRAIN_DEFAULTS = {
    "steps": 5,
    "micro_batch_size": 2,
    "lr": 1.0e-3,
    "weight_decay": 0.01,
    "betas": [0.9, 0.999],
    "eps": 1.0e-8,
    "seed": 1234,
    "model": "ppstream.mindspore.model.moe:build",  # the model factory, MODULE:FUNCTION (recipe.py)
    "data": "ppstream.mindspore.data.text:batches",  # the data factory, MODULE:FUNCTION
    "text": "/usr/share/games/fortunes",  # the built-in text data's corpus: a file or a directory
    "module_dir": "",  # where train.model/data/eval_data are imported from first; "": the config's directory
    "recompute": False,  # True: backward reruns the stage's forward (keeps only stage inputs)
    # LR schedule (components/lr_schedule.py, Megatron-LM's OptimizerParamScheduler): lr is the peak
    "min_lr": 0.0,
    "lr_warmup_steps": 0,
    "lr_warmup_init": 0.0,
    "lr_decay_style": "constant",  # constant | linear | cosine
    "lr_decay_steps": 0,  # 0: the run's steps
    "clip_grad": 0.0,  # global gradient-norm clipping threshold (components/clipping.py); 0: off
    # loss scaling (components/loss_scale.py): auto = dynamic for model.dtype float16
    "loss_scale": "auto",  # auto | dynamic | none
    "initial_loss_scale": 65536.0,
    "min_loss_scale": 1.0,
    "loss_scale_window": 1000,
    "hysteresis": 2,
    # dtypes of the HSDP collectives (components/precision.py)
    "reduce_dtype": "float32",
    "all_gather_dtype": "float32",
    # evaluation (components/evaluate.py)
    "eval_every": 0,  # 0: off
    "eval_batches": 2,
    "eval_holdout": 0.1,  # fraction of the built-in text corpus held out (only with eval_every > 0)
    "eval_data": "",  # the held-out data factory, MODULE:FUNCTION; "": the built-in text's held-out part
    "hccl_buffer_size": 0,  # MB per communication group on Ascend; 0: HCCL_BUFFSIZE / HCCL's 200 (docs/runtime.md)
}


class RunConfigError(ValueError):
    """A bad ``model:``/``train:`` value; the message names the file, key and expectation."""


@dataclasses.dataclass
class RunConfig:
    pp: int
    vpp: int
    micro_batch_num: int
    stage_layers: list[tuple[int, int]]  # inclusive layer range of global virtual stage s
    model: dict[str, Any]
    train: dict[str, Any]
    config_dir: str = ""  # the config file's directory: factories are importable from it

    @property
    def builtin_model(self) -> bool:
        return self.train["model"] == BUILTIN_MODEL

    @property
    def model_dtype(self) -> str:
        return dtype_of(self.model)

    @property
    def num_layers(self) -> int:
        return sum(b - a + 1 for a, b in self.stage_layers)

    @property
    def num_stages(self) -> int:
        return self.pp * self.vpp

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @staticmethod
    def from_json(d: dict[str, Any]) -> "RunConfig":
        return RunConfig(d["pp"], d["vpp"], d["micro_batch_num"], [tuple(x) for x in d["stage_layers"]],
                         d["model"], d["train"], d.get("config_dir", ""))


def _typed(value: Any, default: Any, where: str) -> Any:
    """``value`` as the type of ``default`` (PyYAML reads ``1e-6`` without a dot as a string)."""
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
    elif isinstance(default, int):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif isinstance(default, float):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                pass
    elif isinstance(default, list):
        if isinstance(value, list):
            return [_typed(v, default[0], where) for v in value] if default else value
    elif isinstance(default, str):
        if isinstance(value, str):
            return value
    raise RunConfigError(f"{where}={value!r}: expected {type(default).__name__} (like the default {default!r})")


def _section(doc: dict, name: str, defaults: dict, where: str) -> dict:
    given = doc.get(name) or {}
    if not isinstance(given, dict):
        raise RunConfigError(f"{where}: {name}: expected a mapping")
    for k in given:
        if k not in defaults:
            raise RunConfigError(f"{where}: unknown key {name}.{k}; known keys: {', '.join(sorted(defaults))}")
    out = dict(defaults)
    out.update({k: _typed(v, defaults[k], f"{where}: {name}.{k}") for k, v in given.items()})
    return out


def dtype_of(model: dict) -> str:
    """The dtype ``train.loss_scale: auto`` resolves against: ``model.dtype`` of the built-in model,
    or of the user's ``model:`` section when it has one, else ``float32`` (no scaling)."""
    d = model.get("dtype", "float32")
    return d if isinstance(d, str) else "float32"


def _check_components(path: str, train: dict, dtype: str) -> None:
    """The training components' own rules (schedule, loss scaling, precision, evaluation), with
    the file named; the schedule's default decay length is checked against ``train.steps``."""
    from ppstream.mindspore.components import evaluate, precision
    from ppstream.mindspore.components.loss_scale import DynamicLossScaler, scaling_enabled
    from ppstream.mindspore.components.lr_schedule import LrSchedule
    try:
        LrSchedule.from_train(train, int(train["steps"]))
        if scaling_enabled(train, dtype):
            DynamicLossScaler.from_train(train)
        precision.check(train)
        evaluate.check(train)
    except ValueError as e:
        raise RunConfigError(f"{path}: {e}") from None
    if int(train["eval_every"]) > 0 and not train["eval_data"] and train["data"] != BUILTIN_DATA:
        raise RunConfigError(f"{path}: train.eval_every={train['eval_every']} with train.data={train['data']!r}: set "
                             "train.eval_data: MODULE:FUNCTION, the factory of the held-out batches (only the "
                             "built-in text data holds out a part of its own)")
    if train["clip_grad"] < 0:
        raise RunConfigError(f"{path}: train.clip_grad={train['clip_grad']}: expected >= 0 (0: off)")


def load_run_config(path: str, overrides: dict[str, str] | None = None) -> RunConfig:
    """Reads the YAML at ``path``; ``overrides`` are the CLI's ``key=value`` (``model.hidden=64``).

    The pipeline keys and the layer → virtual-stage map come from the C++ loader
    (``ppstream._core.load_config``: one set of rules and errors); the ``model:``/``train:``
    sections are read here. Raises ``ppstream.ConfigError`` or ``RunConfigError``.
    """
    from ppstream import _core

    overrides = dict(overrides or {})
    local = {k: v for k, v in overrides.items() if k.split(".", 1)[0] in ("model", "train")}
    core = json.loads(_core.load_config(path, {k: v for k, v in overrides.items() if k not in local}))
    doc = {name: (yaml.safe_load(text) or {}) for name, text in core["extra_sections"].items()}
    for key, value in local.items():
        sec, sub = key.split(".", 1)
        section = doc.setdefault(sec, {})
        if not isinstance(section, dict):
            raise RunConfigError(f"{path}: {sec}: expected a mapping")
        section[sub] = yaml.safe_load(value) if value != "" else ""
    train = _section(doc, "train", TRAIN_DEFAULTS, path)
    layers = [tuple(x) for x in core["stage_layers"]]
    cfg_dir = os.path.dirname(os.path.abspath(path))
    if train["module_dir"]:  # relative to the config's directory (tune --apply writes it absolute)
        cfg_dir = os.path.normpath(os.path.join(cfg_dir, train["module_dir"]))
        if not os.path.isdir(cfg_dir):
            raise RunConfigError(f"{path}: train.module_dir={train['module_dir']!r}: {cfg_dir} is not a directory "
                                 "(the factories' modules are imported from it first)")
    if train["hccl_buffer_size"] < 0:
        raise RunConfigError(f"{path}: train.hccl_buffer_size={train['hccl_buffer_size']}: expected MB >= 1, or 0 "
                             "for HCCL's own size (HCCL_BUFFSIZE, default 200)")
    if train["model"] != BUILTIN_MODEL:  # the user's model: its section is the factory's, as written
        model = doc.get("model") or {}
        if not isinstance(model, dict):
            raise RunConfigError(f"{path}: model: expected a mapping (it is passed to {train['model']})")
        _check_components(path, train, dtype_of(model))
        return RunConfig(core["pipeline_parallel_size"], core["pipeline_parallel_interleave_num"],
                         core["micro_batch_num"], layers, model, train, cfg_dir)
    model = _section(doc, "model", MODEL_DEFAULTS, path)
    if model["hidden"] % model["heads"]:
        raise RunConfigError(f"{path}: model.hidden={model['hidden']} must be a multiple of model.heads={model['heads']}")
    if model["dtype"] not in MODEL_DTYPES:
        raise RunConfigError(f"{path}: model.dtype={model['dtype']!r}: expected one of {', '.join(MODEL_DTYPES)}")
    if not 1 <= model["top_k"] <= model["experts"]:
        raise RunConfigError(f"{path}: model.top_k={model['top_k']} must be in 1..model.experts={model['experts']}")
    _check_components(path, train, model["dtype"])
    return RunConfig(core["pipeline_parallel_size"], core["pipeline_parallel_interleave_num"],
                     core["micro_batch_num"], layers, model, train, cfg_dir)
