"""RunConfig: what a training run needs beyond the stream programs (model, data, steps).

The core keys (PP size, layers, DP mode, …) are validated by the C++ loader
(``ppstream._core.compile``); here we read only what the runtime needs from the same YAML:
the ``model:`` and ``train:`` sections and the layer → virtual-stage map.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import yaml

MODEL_DEFAULTS = {"hidden": 32, "heads": 2, "experts": 2, "top_k": 1, "ffn": 64, "seq_len": 32, "vocab": 256}
TRAIN_DEFAULTS = {
    "steps": 5,
    "micro_batch_size": 2,
    "lr": 1.0e-3,
    "weight_decay": 0.01,
    "betas": [0.9, 0.999],
    "eps": 1.0e-8,
    "seed": 1234,
    "data": "/usr/share/games/fortunes",
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
                         d["model"], d["train"])


def parse_layer_string(text: str, where: str) -> list[tuple[int, int]]:
    """"0-5,24-29" -> [(0, 5), (24, 29)] (one range per chunk of one PP rank)."""
    out = []
    for part in str(text).split(","):
        part = part.strip()
        lo, sep, hi = part.partition("-")
        try:
            a = int(lo)
            b = int(hi) if sep else a
        except ValueError:
            raise RunConfigError(f"{where}: layer range {part!r}: expected 'a-b' with integers") from None
        out.append((a, b))
    return out


def stage_layers_of(pp: int, vpp: int, num_layers: int, layer_strings: list[str] | None, where: str):
    """Layers of each global virtual stage s (chunk s // pp of PP rank s % pp)."""
    stages = pp * vpp
    if layer_strings:
        per_rank = [parse_layer_string(t, f"{where}: pipeline_parallel_layers_per_stage[{i}]")
                    for i, t in enumerate(layer_strings)]
        return [per_rank[s % pp][s // pp] for s in range(stages)]
    if num_layers < stages:
        raise RunConfigError(f"{where}: num_layers={num_layers} must be >= {stages} virtual stages")
    base, extra = divmod(num_layers, stages)
    out, first = [], 0
    for s in range(stages):
        n = base + (1 if s < extra else 0)
        out.append((first, first + n - 1))
        first += n
    return out


def _section(doc: dict, name: str, defaults: dict, where: str) -> dict:
    given = doc.get(name) or {}
    if not isinstance(given, dict):
        raise RunConfigError(f"{where}: {name}: expected a mapping")
    for k in given:
        if k not in defaults:
            raise RunConfigError(f"{where}: unknown key {name}.{k}; known keys: {', '.join(sorted(defaults))}")
    out = dict(defaults)
    out.update(given)
    return out


def load_run_config(path: str, overrides: dict[str, str] | None = None) -> RunConfig:
    """Reads the YAML at ``path``; ``overrides`` are the CLI's ``key=value`` (``model.hidden=64``)."""
    with open(path, encoding="utf-8") as f:
        doc = yaml.safe_load(f) or {}
    for key, value in (overrides or {}).items():
        parsed = yaml.safe_load(value) if value != "" else ""
        if "." in key:
            sec, sub = key.split(".", 1)
            if sec in ("model", "train"):
                doc.setdefault(sec, {})[sub] = parsed
            continue  # data_parallel.* is the C++ loader's business
        if key == "pipeline_parallel_layers_per_stage" and isinstance(parsed, str):
            parsed = [t for t in parsed.split(";") if t] or None
        doc[key] = parsed
    pp = int(doc.get("pipeline_parallel_size", 1))
    vpp = int(doc.get("pipeline_parallel_interleave_num", 1))
    layers = stage_layers_of(pp, vpp, int(doc.get("num_layers", 0) or 0),
                             doc.get("pipeline_parallel_layers_per_stage"), path)
    model = _section(doc, "model", MODEL_DEFAULTS, path)
    train = _section(doc, "train", TRAIN_DEFAULTS, path)
    if model["hidden"] % model["heads"]:
        raise RunConfigError(f"{path}: model.hidden={model['hidden']} must be a multiple of model.heads={model['heads']}")
    if not 1 <= model["top_k"] <= model["experts"]:
        raise RunConfigError(f"{path}: model.top_k={model['top_k']} must be in 1..model.experts={model['experts']}")
    return RunConfig(pp, vpp, int(doc.get("micro_batch_num", 1)), layers, model, train)
