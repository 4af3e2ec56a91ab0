"""CPU smoke test of the fine-tuning entry point (``evaluation.training.train``): the tiny random Llama
of ``tests/serving/tiny_model.py``, six export lines, a few LoRA SFT steps, then a few GRPO
steps whose reward is the op scorer reading the dataset's columns.

The lines are in the export format (``personatree-training/1``) with real schema paths, gold ops,
a declined op and the dynamic prompt part of ``serving.prompt.build_prompt``; the *static* part
is one short rules sentence instead of the full prompt (the full one is about 12k tokens for the
tiny tokenizer, longer than the tiny model's context and too slow for a CPU smoke run).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

trl = pytest.importorskip("trl", reason="trl is not installed (the `train` extra: pip install -e '.[train]')")
torch = pytest.importorskip("torch")

from memory.engine.schema import get_schema  # noqa: E402
from serving.prompt import build_prompt  # noqa: E402

CONFIGS = Path(__file__).resolve().parents[3] / "evaluation" / "training" / "configs"
STATIC = 'You keep the memory of one user. Reply with JSON only: {"ops": [...]}.'
EXAMPLES = [
    ("Hi, how are you?", {}, [("NO_OP", None, None)]),
    ("Thanks, that helps!", {}, [("NO_OP", None, None)]),
    ("What a rainy day.", {}, [("NO_OP", None, None)]),
    ("I moved to Lisbon last month.", {}, [("ADD", "identity/location/current_city", "Lisbon")]),
    ("I work as a nurse now.", {}, [("ADD", "identity/occupation/current_role", "nurse")]),
    ("We adopted a cat named Miso.", {}, [("ADD", "identity/family/pets", "cat named Miso")]),
    (
        "I quit running, I swim now.",
        {"behaviour/habits/exercise": "running"},
        [("UPDATE", "behaviour/habits/exercise", "swimming")],
    ),
    ("I live in Porto these days.", {}, [("ADD", "identity/location/current_city", "Porto")]),
]


def export_lines(path: Path) -> None:
    schema = get_schema("personatree-default", 1)
    with path.open("w", encoding="utf-8") as fh:
        for i, (said, tree, ops) in enumerate(EXAMPLES, 1):
            turns = [{"role": "user", "content": said}, {"role": "assistant", "content": "Noted."}]
            prompt = build_prompt(schema, tree, turns)
            gold = [{"op": o, "path": p, "value": v, "origin": "applied"} for o, p, v in ops]
            target = json.dumps({"ops": [{"op": o, "path": p, "value": v} for o, p, v in ops]})
            line = {
                "format": "personatree-training/1",
                "chunk_id": i,
                "subject_id": i,
                "split": "train",
                "schema_id": "personatree-default",
                "schema_version": 1,
                "prompt_version": prompt.prompt_version,
                "tree": tree,
                "turns": turns,
                "prompt": {"static": STATIC, "dynamic": prompt.dynamic},
                "target": target,
                "gold": gold,
                "negatives": [
                    {
                        "op": "ADD",
                        "path": "identity/occupation/current_role",
                        "value": "doctor",
                        "origin": "declined",
                    }
                ],
            }
            fh.write(json.dumps(line) + "\n")


def _param(model_dir: Path, name: str = "model.layers.0.mlp.up_proj.weight"):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    return model.state_dict()[name].clone()


def _run(config: str, *overrides: str, reward=None):
    from evaluation.training.train import load_config, train

    return train(load_config(CONFIGS / config, list(overrides)), reward=reward)


@pytest.mark.slow
def test_sft_then_grpo_on_the_tiny_model(tmp_path, monkeypatch):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from evaluation.training.reward import ScorerReward, ops_of
    from memory.engine.scorer import score
    from tests.serving.tiny_model import build

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    base = build(tmp_path / "tiny")
    data = tmp_path / "listener.jsonl"
    export_lines(data)
    lines = {json.loads(x)["chunk_id"]: json.loads(x) for x in data.read_text().splitlines()}

    # SFT: finite losses that go down, a new checkpoint with its model card, weights moved.
    sft = _run("smoke_sft.yaml", f"model={base}", f"data.path={data}", f"output_dir={tmp_path / 'sft'}")
    losses = sft.losses()
    assert losses and all(math.isfinite(x) for x in losses)
    assert losses[-1] < losses[0]
    card = json.loads((sft.final_dir / "memlistener_model.json").read_text())
    assert card["model_id"] == "memlistener-tiny-smoke-sft" and card["version"] == "0"
    assert card["stage"] == "sft" and card["dataset"]["examples"] == 3
    assert not torch.equal(_param(base), _param(sft.final_dir))

    # GRPO (LoRA, merged) from the SFT checkpoint, the scorer as reward on the dataset's columns.
    reward = ScorerReward(record=True)
    grpo = _run(
        "smoke_grpo.yaml",
        f"model={sft.final_dir}",
        f"data.path={data}",
        f"output_dir={tmp_path / 'grpo'}",
        reward=reward,
    )
    assert grpo.losses() and all(math.isfinite(x) for x in grpo.losses())
    assert len(reward.calls) == 4 * 2  # max_steps x (1 prompt x 2 generations)
    for chunk_id, text, total in reward.calls:
        line = lines[chunk_id]
        again = score(
            text,
            ops_of(line["gold"]),
            line["tree"],
            line["turns"],
            schema=get_schema(line["schema_id"], line["schema_version"]),
            declined_ops=ops_of(line["negatives"]),
        )
        assert again.total == total and -1.0 <= total <= 1.0
    logged = [h["rewards/scorer/mean"] for h in grpo.log_history if "rewards/scorer/mean" in h]
    assert len(logged) == 4
    groups: dict[int, set[float]] = {}
    for i, (_, _, total) in enumerate(reward.calls):
        groups.setdefault(i // 2, set()).add(total)
    # At least one group had two different rewards (a readable and an unreadable sample, say), so
    # the policy got a non-zero advantage and the merged weights moved.
    assert any(len(v) > 1 for v in groups.values()), reward.calls
    assert not torch.equal(_param(sft.final_dir), _param(grpo.final_dir))
    assert (grpo.output_dir / "adapter" / "adapter_config.json").is_file()
    card = json.loads((grpo.final_dir / "memlistener_model.json").read_text())
    assert card["stage"] == "grpo" and card["merged"] is True and card["lora"]["r"] == 8

    # The final checkpoint is a plain Hugging Face directory: it loads and generates.
    tok = AutoTokenizer.from_pretrained(grpo.final_dir)
    model = AutoModelForCausalLM.from_pretrained(grpo.final_dir)
    assert not any("lora" in k for k in model.state_dict())
    ids = tok.apply_chat_template(
        [{"role": "system", "content": STATIC}, {"role": "user", "content": "I moved to Lisbon."}],
        add_generation_prompt=True,
        return_tensors="pt",
    )
    out = model.generate(ids, max_new_tokens=5, do_sample=False)
    assert out.shape[1] == ids.shape[1] + 5 or out[0, -1].item() == tok.eos_token_id
