"""Fine-tune the MemListener: ``sft`` (TRL ``SFTTrainer``) or ``grpo`` (TRL ``GRPOTrainer``, the
scorer as reward), one YAML config per stage (``evaluation/training/configs/``).

    python -m evaluation.training.train evaluation/training/configs/sft.yaml \\
        [--model DIR] [--data JSONL] [--output-dir DIR] [--set trainer.max_steps=10 ...]

The config (keys not listed are refused):

- ``stage``: ``sft`` | ``grpo``;
- ``model``: a local Hugging Face directory (no hub download: ``HF_HUB_OFFLINE=1``);
- ``output_dir``: the run directory; the final model is written to ``<output_dir>/final``;
- ``model_id`` / ``version``: recorded in ``final/memlistener_model.json``;
- ``data``: ``path`` (export JSONL), ``split`` (default ``train``), ``max_examples``, ``shuffle`` (by ``seed``, before the cut);
- ``lora``: ``r``, ``alpha``, ``dropout``, ``target_modules`` -- or ``null`` for full fine-tuning;
- ``merge``: merge the LoRA adapter into the base weights for ``final`` (default true; the
  adapter alone is saved to ``<output_dir>/adapter`` either way);
- ``seed``;
- ``trainer``: fields of ``trl.SFTConfig`` / ``trl.GRPOConfig`` (checked against the installed
  TRL: an unknown field is an error, not silently ignored).

Output: ``<output_dir>/final`` is a Hugging Face directory (``save_pretrained`` weights +
tokenizer) with ``memlistener_model.json`` (model id, version, stage, base model, dataset sha256,
TRL/transformers versions, last logged metrics). :func:`train` returns a :class:`TrainResult`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from evaluation.training.data import load_dataset
from evaluation.training.reward import ScorerReward

STAGES = ("sft", "grpo")
TOP_KEYS = {"stage", "model", "output_dir", "model_id", "version", "data", "lora", "merge", "seed", "trainer"}
MODEL_CARD = "memlistener_model.json"
# Set for every run (CPU or GPU alike): no hub, no external logger, we save the final model ourselves.
FORCED = {"report_to": "none", "save_strategy": "no", "push_to_hub": False}


@dataclass
class TrainResult:
    stage: str
    output_dir: Path
    final_dir: Path
    log_history: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    reward: ScorerReward | None = None

    def losses(self) -> list[float]:
        return [float(h["loss"]) for h in self.log_history if "loss" in h]


def load_config(path: str | Path, overrides: list[str] = ()) -> dict[str, Any]:
    cfg = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    for item in overrides:
        key, _, value = item.partition("=")
        node = cfg
        *parents, leaf = key.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = _scalar(value)
    return cfg


def _scalar(text: str) -> Any:
    """A ``--set`` value read as YAML; ``1e-6`` (a string to YAML 1.1) is read as a float."""
    value = yaml.safe_load(text)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def check_config(cfg: dict[str, Any]) -> None:
    unknown = set(cfg) - TOP_KEYS
    if unknown:
        raise ValueError(f"unknown config key(s): {sorted(unknown)}")
    if cfg.get("stage") not in STAGES:
        raise ValueError(f"stage must be one of {STAGES}, got {cfg.get('stage')!r}")
    for key in ("model", "output_dir", "model_id", "data"):
        if not cfg.get(key):
            raise ValueError(f"config needs {key!r}")


def trainer_args(stage: str, values: dict[str, Any], output_dir: str, seed: int):
    from trl import GRPOConfig, SFTConfig

    cls = SFTConfig if stage == "sft" else GRPOConfig
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = set(values) - known
    if unknown:
        raise ValueError(f"{cls.__name__} has no field(s) {sorted(unknown)} (installed TRL)")
    return cls(output_dir=output_dir, seed=seed, **{**values, **FORCED})


def peft_config(lora: dict[str, Any] | None):
    if not lora:
        return None
    from peft import LoraConfig

    return LoraConfig(
        r=int(lora.get("r", 16)),
        lora_alpha=int(lora.get("alpha", 32)),
        lora_dropout=float(lora.get("dropout", 0.0)),
        target_modules=lora.get("target_modules", "all-linear"),
        # Adapters on the top layers only: backward then stops there (CPU runs, docs/TRAINING.md).
        layers_to_transform=lora.get("layers"),
        task_type="CAUSAL_LM",
    )


def _forward_args(model) -> set[str]:
    import inspect

    return set(inspect.signature(model.forward).parameters)


def _versions() -> dict[str, str]:
    import peft
    import torch
    import transformers
    import trl

    return {
        "trl": trl.__version__,
        "transformers": transformers.__version__,
        "peft": peft.__version__,
        "torch": torch.__version__,
    }


def save_final(trainer, tokenizer, cfg: dict[str, Any], data_info: dict[str, Any], out: Path) -> Path:
    """``<out>/final``: merged (or full) weights + tokenizer + ``memlistener_model.json``."""
    model = trainer.model
    lora = bool(cfg.get("lora"))
    if lora:
        model.save_pretrained(out / "adapter")
        if cfg.get("merge", True):
            model = model.merge_and_unload()
    final = out / "final"
    model.save_pretrained(final, safe_serialization=True)
    tokenizer.save_pretrained(final)
    metrics = {k: v for h in trainer.state.log_history for k, v in h.items() if isinstance(v, int | float)}
    card = {
        "model_id": cfg["model_id"],
        "version": str(cfg.get("version", "")),
        "stage": cfg["stage"],
        "base_model": str(cfg["model"]),
        "lora": cfg.get("lora") or None,
        "merged": (not lora) or bool(cfg.get("merge", True)),
        "dataset": data_info,
        "steps": trainer.state.global_step,
        "last_metrics": metrics,
        "versions": _versions(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (final / MODEL_CARD).write_text(json.dumps(card, indent=2, sort_keys=True), encoding="utf-8")
    return final


def train(cfg: dict[str, Any], *, reward: ScorerReward | None = None) -> TrainResult:
    """Run one stage; ``reward`` replaces the default :class:`ScorerReward` (tests record calls)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    check_config(cfg)
    stage, out = cfg["stage"], Path(cfg["output_dir"])
    seed = int(cfg.get("seed", 0))
    data = cfg["data"]
    dataset, data_info = load_dataset(
        data["path"],
        data.get("split", "train"),
        data.get("max_examples"),
        seed if data.get("shuffle") else None,
    )
    args = trainer_args(stage, dict(cfg.get("trainer") or {}), str(out), seed)

    torch.manual_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(cfg["model"])
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    dtype = torch.bfloat16 if getattr(args, "bf16", False) else torch.float32
    model = AutoModelForCausalLM.from_pretrained(cfg["model"], dtype=dtype)
    if "token_type_ids" in tokenizer.model_input_names and "token_type_ids" not in _forward_args(model):
        # e.g. a bare PreTrainedTokenizerFast: generate() refuses inputs the model does not take.
        tokenizer.model_input_names = [n for n in tokenizer.model_input_names if n != "token_type_ids"]
    started = time.monotonic()
    if stage == "sft":
        from trl import SFTTrainer

        trainer = SFTTrainer(
            model=model,
            args=args,
            train_dataset=dataset.select_columns(["prompt", "completion"]),
            processing_class=tokenizer,
            peft_config=peft_config(cfg.get("lora")),
        )
    else:
        from trl import GRPOTrainer

        reward = reward or ScorerReward()
        trainer = GRPOTrainer(
            model=model,
            reward_funcs=[reward],
            args=args,
            train_dataset=dataset.remove_columns(["completion"]),
            processing_class=tokenizer,
            peft_config=peft_config(cfg.get("lora")),
        )
    trainer.train()
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    if not losses or not all(math.isfinite(float(x)) for x in losses):
        raise RuntimeError(f"{stage}: no finite loss logged ({losses})")
    final = save_final(trainer, tokenizer, cfg, data_info, out)
    return TrainResult(stage, out, final, list(trainer.state.log_history), time.monotonic() - started, reward)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m evaluation.training.train", description=__doc__.split("\n")[0]
    )
    ap.add_argument("config", help="YAML config (evaluation/training/configs/*.yaml)")
    ap.add_argument("--model", help="override `model` (local Hugging Face directory)")
    ap.add_argument("--data", help="override `data.path` (export JSONL)")
    ap.add_argument("--output-dir", help="override `output_dir`")
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override any key, dotted (trainer.max_steps=10); VALUE is read as YAML",
    )
    ns = ap.parse_args(argv)
    overrides = list(ns.set)
    if ns.model:
        overrides.append(f"model={ns.model}")
    if ns.data:
        overrides.append(f"data.path={ns.data}")
    if ns.output_dir:
        overrides.append(f"output_dir={ns.output_dir}")
    result = train(load_config(ns.config, overrides))
    print(
        f"{result.stage}: {len(result.losses())} logged step(s), last loss {result.losses()[-1]:.4f}, "
        f"{result.seconds:.0f} s -> {result.final_dir}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
