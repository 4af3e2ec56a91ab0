"""Tiny random-weight XLM-R models built locally, to exercise the BGE-M3 and FlagReranker code paths.

BGE-M3 / bge-reranker weights cannot be downloaded here; these models have the same file layout
(XLM-R config + weights, a SentencePiece-style tokenizer saved as XLMRobertaTokenizerFast, and
for BGE-M3 the colbert_linear.pt / sparse_linear.pt heads). Their scores are meaningless; tests
use them only to check shapes, normalisation and wiring.
"""

from __future__ import annotations

from pathlib import Path

CORPUS = [
    "I adopted a grey cat called Pixel",
    "my knee hurts after running so I switched to swimming",
    "we moved to Lisbon in March",
    "my sister Mia is visiting next week",
    "user assistant hello thanks sure what when why how",
] * 20


def _tokenizer(out: Path):
    from tokenizers import SentencePieceUnigramTokenizer
    from transformers import XLMRobertaTokenizerFast

    sp = SentencePieceUnigramTokenizer()
    sp.train_from_iterator(
        CORPUS, vocab_size=120, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"], unk_token="<unk>"
    )
    tok = XLMRobertaTokenizerFast(
        tokenizer_object=sp._tokenizer,
        bos_token="<s>",
        eos_token="</s>",
        sep_token="</s>",
        cls_token="<s>",
        unk_token="<unk>",
        pad_token="<pad>",
        mask_token="<mask>",
    )
    tok.save_pretrained(out)
    return tok


def _config(tok):
    from transformers import XLMRobertaConfig

    return XLMRobertaConfig(
        vocab_size=len(tok),
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=600,
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        type_vocab_size=1,
    )


def build_tiny_bge_m3(out: Path) -> Path:
    import torch
    from transformers import XLMRobertaModel

    out.mkdir(parents=True, exist_ok=True)
    tok = _tokenizer(out)
    torch.manual_seed(0)
    XLMRobertaModel(_config(tok)).save_pretrained(out)
    torch.save(torch.nn.Linear(32, 32).state_dict(), out / "colbert_linear.pt")
    torch.save(torch.nn.Linear(32, 1).state_dict(), out / "sparse_linear.pt")
    return out


def build_tiny_reranker(out: Path) -> Path:
    import torch
    from transformers import XLMRobertaForSequenceClassification

    out.mkdir(parents=True, exist_ok=True)
    tok = _tokenizer(out)
    torch.manual_seed(0)
    cfg = _config(tok)
    cfg.num_labels = 1
    XLMRobertaForSequenceClassification(cfg).save_pretrained(out)
    return out
