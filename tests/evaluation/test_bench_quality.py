"""bench/bench_quality.py on the project's tiny synthetic LoCoMo file (never ../shared): the listener
loop without Django, the baselines, and the fixed metric names it writes."""

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NAMES = {
    "memlistener.grounded_rate",
    "memlistener.invented_rate",
    "memlistener.wrong_speaker_rate",
    "memlistener.s_per_chunk_p50",
    "memlistener.model_skip_share",
    "quality.locomo_obs_coverage",
    "quality.locomo_obs_coverage_06",
    "quality.locomo_obs_coverage_07",
    "quality.locomo_obs_precision",
    "quality.tree_tokens_p50",
}


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_quality", ROOT / "bench" / "bench_quality.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_speaker_turns_and_observations(bench, locomo_path):
    sample = bench.load_sample(locomo_path, "tiny-1")
    turns = bench.speaker_turns(sample, "Ben")
    assert [t["role"] for t in turns[:2]] == ["assistant", "user"] and len(turns) == 10
    assert turns[1]["content"].startswith("Congrats Ana!")
    assert len(bench.observations(sample, "Ana")) == 5


def test_extractive_listener_and_baselines(bench, locomo_path, tmp_path, monkeypatch):
    m = bench.measure(locomo_path, "tiny-1")
    assert m["chunks"] == 4 and m["errors"] == 0
    ana = m["speakers"]["Ana"]
    assert ana["values"]["values"] >= 1 and ana["values"]["grounded_rate"] == 1.0
    assert ana["values"]["invented_rate"] == 0.0 and ana["coverage"]["facts"] == 5
    assert ana["tree"] and ana["coverage"]["clauses"] >= 1
    rows = bench.metrics(m)
    assert set(rows) == NAMES and all(set(r) == {"value", "unit", "target", "note"} for r in rows.values())
    assert 0 <= rows["memlistener.model_skip_share"]["value"] <= 1

    empty = bench.measure(locomo_path, "tiny-1", baseline="no_op")
    assert empty["both"]["values"]["values"] == 0 and empty["both"]["values"]["grounded_rate"] is None
    assert empty["both"]["coverage"]["coverage"]["0.5"] == 0.0 and empty["model_skip_share"] is None

    nearest = bench.measure(locomo_path, "tiny-1", baseline="nearest")
    values = nearest["speakers"]["Ana"]["values"]
    assert values["values"] >= 1 and values["grounded_rate"] == 1.0  # verbatim sentences
    assert all(len(v) <= 400 for v in nearest["speakers"]["Ana"]["tree"].values())

    out = tmp_path / "latest.json"
    out.write_text(json.dumps({"other.metric": {"value": 1}}))
    monkeypatch.setattr(bench, "RESULTS", out)
    bench.write_latest(rows)
    written = json.loads(out.read_text())
    assert NAMES <= set(written) and "other.metric" in written


def test_missing_data_is_skipped(bench, tmp_path, capsys):
    assert bench.main(["--data", str(tmp_path / "absent.json"), "--no-write"]) == 0
    assert "skipped" in capsys.readouterr().out
    rows = bench._skipped(tmp_path / "absent.json")
    assert set(rows) == NAMES and all(r["value"] is None for r in rows.values())
