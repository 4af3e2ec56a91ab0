import json

from evaluation.metrics import Outcome, accuracy_table, distribution
from evaluation.results import provenance, render_markdown, write_results


def sample_results():
    return {
        "title": "tiny",
        "provenance": provenance(memlistener_model="m1", prompt_version="p1", schema="s@1"),
        "run": {"command": "manage.py evaluate personamem ..."},
        "modes": {
            "no_memory": {
                "accuracy": accuracy_table([Outcome("a", True), Outcome("b", False)]),
                "context_tokens": distribution([0, 0]),
            },
            "tree_only": {
                "accuracy": accuracy_table([Outcome("a", True), Outcome("b", True)]),
                "context_tokens": distribution([40, 60]),
            },
        },
        "retrieval": {
            "overall": {"n": 2, "recall@1": 0.5},
            "per_group": {"single_hop": {"n": 2, "recall@1": 0.5}},
            "skipped_without_evidence": 1,
        },
    }


def test_write_results(tmp_path):
    paths = write_results(sample_results(), tmp_path / "out")
    data = json.loads(paths["json"].read_text())
    assert data["provenance"]["memlistener_model"] == "m1"
    assert data["provenance"]["commit"]  # run inside the repo's git checkout
    for key in ("accuracy_png", "tokens_png", "recall_png"):
        assert paths[key].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = paths["markdown"].read_text()
    assert "| tree_only | 2 | 1.000 |" in md
    assert "1.000 (1/1)" in md and "0.000 (0/1)" in md


def test_markdown_sections_only_when_present():
    md = render_markdown({"title": "x"})
    assert "accuracy" not in md.lower()
