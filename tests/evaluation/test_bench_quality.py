"""bench/bench_quality.py on the project's tiny synthetic LoCoMo and SPC files (never ../shared, never
MiniLM): the listener loop with a fake listener, the baselines, tune/validation pooling, the run folder
and the fixed metric names it writes."""

import importlib.util
import json
import zlib
from pathlib import Path

import numpy as np
import pytest

from serving.protocol import ListenerResult

ROOT = Path(__file__).resolve().parents[2]
SPC = ROOT / "tests" / "fixtures" / "eval" / "spc_tiny.csv"
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
    "quality.locomo_obs_precision_06",
    "quality.tree_tokens_p50",
    "quality.first_person_rate",
    "quality.words_per_clause_p50",
    "quality.answerable_ratio",
    "quality.answerable_words_ratio",
    "quality.answerable_ratio_first_person_paste",
    "quality.answerable_words_ratio_first_person_paste",
    "quality.false_deletes",
    "quality.spc_stated_coverage_06",
    "quality.spc_precision_06",
}


def bow_embed(texts):
    out = np.zeros((len(texts), 512))
    for i, text in enumerate(texts):
        for w in text.lower().replace(".", " ").replace(",", " ").split():
            out[i, zlib.crc32(w.encode()) % 512] += 1.0
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.where(norms == 0, 1, norms)


class FakeListener:
    """Writes the chunk's first user turn to ``notes/first``; on chunk 1 deletes that leaf and writes
    the turn to ``notes/second``."""

    def __init__(self):
        self.jobs = []

    def run(self, jobs):
        out = []
        for job in jobs:
            self.jobs.append(job)
            k = int(job.job_id.rsplit("-", 1)[1])
            user = [t.content for t in job.turns if t.role == "user"]
            old = job.tree.get("notes/first")
            if k == 1 and old and user:
                ops = [
                    {"op": "DELETE", "path": "notes/first", "value": None},
                    {"op": "ADD", "path": "notes/second", "value": user[0]},
                ]
            elif user:
                value = f"{old}; {user[0]}" if old else user[0]
                ops = [{"op": "UPDATE" if old else "ADD", "path": "notes/first", "value": value}]
            else:
                ops = []
            out.append(ListenerResult(job_id=job.job_id, ops=ops, skipped_model=not user))
        return out


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_quality", ROOT / "bench" / "bench_quality.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def driver(bench, **kw):
    if "baseline" not in kw:
        kw.setdefault("listener", FakeListener())
    return bench.Driver(embed=bench.CachedEmbed(bow_embed), **kw)


def test_speaker_turns_carry_session_dates_and_history(bench, locomo_path):
    sample = bench.load_sample(locomo_path, "tiny-1")
    turns = bench.speaker_turns(sample, "Ben")
    assert [t["role"] for t in turns[:2]] == ["assistant", "user"] and len(turns) == 10
    assert turns[1]["content"].startswith("Congrats Ana!")
    assert turns[0]["ts"] == "2024-03-03T10:00:00+00:00" and turns[-1]["ts"] == "2024-04-20T18:30:00+00:00"
    assert len(bench.observations(sample, "Ana")) == 5
    history = bench.history_text(sample)
    assert history.startswith("10:00 am on 3 March, 2024\n") and "6:30 pm on 20 April, 2024" in history
    assert bench.history_words(sample) < len(history.split()) + 1  # dates are not counted as words


def test_the_pasted_reference_holds_every_first_person_clause_and_only_those(bench, locomo_path):
    sample = bench.load_sample(locomo_path, "tiny-1")
    pasted = bench.first_person_clauses(sample)
    assert "I adopted a beagle called Rex on Sunday." in pasted and "My knee hurts lately" in pasted
    assert "Rex chewed my favourite shoes yesterday." in pasted  # "my" anywhere in the clause
    assert not any(c.startswith(("Lisbon is lovely", "Rex looks sweet", "Say hi", "Hi Ben")) for c in pasted)


def test_speaker_questions_and_names(bench, locomo_path):
    sample = bench.load_sample(locomo_path, "tiny-1")
    questions = bench.speaker_questions(sample)
    # categories 1-4 with an answer that name Ana or Ben; the category 5 question is left out
    assert [q["question"] for q in questions][:2] == ["What is Ana's job?", "When did Ben adopt Rex?"]
    assert all(q["category"] in (1, 2, 3, 4) for q in questions) and len(questions) == 6
    short = {"conversation": {"speaker_a": "Melanie", "speaker_b": "Jon"},
             "qa": [{"question": "What did Mel paint?", "answer": "a lake", "category": 1},
                    {"question": "What was discussed?", "answer": "art", "category": 1}]}  # fmt: skip
    assert [q["answer"] for q in bench.speaker_questions(short)] == ["a lake"]
    assert bench.speaker_names("Caroline Smith") == ["Caroline Smith", "Caroline"]


def test_listener_loop_counts_removals_and_passes_ts_when_supported(bench, locomo_path, monkeypatch):
    fake = FakeListener()
    d = driver(bench, listener=fake)
    conv = bench.measure_sample(bench.load_sample(locomo_path, "tiny-1"), d)
    ana = conv["speakers"]["Ana"]
    # chunk 1 deletes the leaf: one false delete per speaker
    assert [r["op"] for r in ana["removals"]] == ["DELETE"] and ana["removals"][0]["chunk"] == 1
    assert ana["removals"][0]["dropped"] and ana["values"]["grounded_rate"] == 1.0
    assert conv["answerable"]["questions"] == 6 and conv["history_words"] > conv["tree_words"] > 0
    ts_fields = bench.turns_carry_ts()
    assert all(("ts" in t.model_dump()) == ts_fields for job in fake.jobs for t in job.turns)
    p = bench.pool([conv], "x")
    assert p["false_deletes"] == 2 and p["chunks"] == 4 and p["model_skip_share"] == 0.0
    assert p["words_per_clause_p50"] > 0 and 0 <= p["first_person_rate"] <= 1


def test_baselines(bench, locomo_path):
    empty = bench.measure(locomo_path, "tiny-1", baseline="no_op", embed=bow_embed)
    assert empty["values"]["values"] == 0 and empty["values"]["grounded_rate"] is None
    assert empty["coverage"]["coverage"]["0.5"] == 0.0 and empty["model_skip_share"] is None
    assert empty["answerable"]["in_tree"] == 0 and empty["false_deletes"] == 0

    nearest = bench.measure(locomo_path, "tiny-1", baseline="nearest", embed=bow_embed)
    values = nearest["speakers"]["Ana"]["values"]
    assert values["values"] >= 1 and values["grounded_rate"] == 1.0  # verbatim sentences
    assert nearest["first_person_rate"] > 0.5  # pasted first-person sentences


def test_measure_all_pools_tune_and_validation_and_writes(bench, locomo_path, tmp_path, monkeypatch):
    sample = json.loads(locomo_path.read_text())[0]
    data = tmp_path / "two.json"
    data.write_text(json.dumps([sample, {**sample, "sample_id": "conv-43"}]))
    m = bench.measure_all(data, ["tiny-1", "conv-43"], driver(bench), spc_path=SPC, spc_range=(0, 2))
    assert m["tune"]["conversations"] == ["tiny-1"] and m["validation"]["conversations"] == ["conv-43"]
    assert set(m["per_conversation"]) == {"tiny-1", "conv-43"}
    assert m["null_coverage"]["facts"] == 2 * 9
    spc = m["spc"]
    assert spc["subjects"] == 4 and spc["persona_facts"] == 7 and 0 < spc["stated"] <= 7
    assert spc["coverage"] is not None and 0 <= spc["coverage"] <= 1
    assert 0 < len(m["sample"]) <= 40

    rows = bench.metrics(m)
    assert set(rows) == NAMES and all(set(r) == {"value", "unit", "target", "note"} for r in rows.values())
    assert rows["quality.false_deletes"]["value"] == 2 and rows["quality.false_deletes"]["target"] == "0"
    # conv-43 is tiny-1 again: its first-person clauses and session dates hold the 4 answers its
    # history holds, in fewer words ("Lisbon is lovely", "Rex looks sweet!" are not pasted)
    pasted = m["validation"]["pasted"]
    assert pasted["ratio"] == 1.0 and 0 < pasted["words_ratio"] < 0.9
    assert rows["quality.answerable_ratio_first_person_paste"]["value"] == 1.0
    assert "tune tiny-1" in rows["quality.locomo_obs_coverage_06"]["note"]
    assert "load average" in rows["quality.spc_stated_coverage_06"]["note"]

    out = tmp_path / "latest.json"
    out.write_text(json.dumps({"other.metric": {"value": 1}}))
    from bench import quality_results  # where the command's writers live

    monkeypatch.setattr(quality_results, "RESULTS", out)
    bench.write_latest(rows)
    written = json.loads(out.read_text())
    assert NAMES <= set(written) and "other.metric" in written
    json_path, md_path = bench.write_run(m, rows, tmp_path / "runs")
    record = json.loads(json_path.read_text())
    assert set(record["metrics"]) == NAMES and record["run"]["validation"]["false_deletes"] == 2
    text = md_path.read_text()
    assert "## Removals (4;" in text and "tree values (seeded sample" in text and "| `notes/second` |" in text


def test_missing_data_is_skipped(bench, tmp_path, capsys):
    assert bench.main(["--data", str(tmp_path / "absent.json"), "--no-write"]) == 0
    assert "skipped" in capsys.readouterr().out
    rows = bench._skipped(tmp_path / "absent.json")
    assert set(rows) == NAMES and all(r["value"] is None for r in rows.values())


def test_cached_embed_embeds_each_text_once(bench):
    calls = []

    def embed(texts):
        calls.append(list(texts))
        return bow_embed(texts)

    cached = bench.CachedEmbed(embed)
    first = cached(["a b", "c"])
    second = cached(["c", "a b", "d"])
    assert calls == [["a b", "c"], ["d"]]
    assert np.allclose(first[0], second[1])


def test_leaf_accuracy_hook_scores_a_placer(bench, tmp_path, monkeypatch):
    import sys
    import types

    labels = tmp_path / "labels.jsonl"
    rows = [
        {"clause": "I have a cat", "leaf": "family/pets", "alt": []},
        {"clause": "I live in Lisbon", "leaf": "location/home", "alt": ["location/city"]},
        {"clause": "Nice weather", "leaf": "mind/moods", "alt": []},
    ]
    labels.write_text("\n".join(json.dumps(r) for r in rows) + "\n")

    class Placer:
        @classmethod
        def for_schema(cls, schema):
            return cls()

        def texts(self):
            return [("family/pets", "pets"), ("location/city", "city")]

        def rank(self, clause, vector, leaf_vectors, *, top=3):
            assert len(leaf_vectors) == 2 and len(vector) == 512 and isinstance(leaf_vectors[0][0], float)
            if "cat" in clause:
                return [("family/pets", 0.9)]
            return [("location/city", 0.8)] if "Lisbon" in clause else []

    monkeypatch.setitem(sys.modules, "memory.engine.placement", types.SimpleNamespace(LeafPlacer=Placer))
    got = bench.leaf_accuracy_hook(labels, bow_embed)
    assert (
        got["in_sample_fit"] == pytest.approx(2 / 3, abs=1e-4) and got["clauses"] == 3
    )  # alt counts; unfiled is wrong
    # The reported accuracy is the trainer's cross-validated one, not the fit on its own labels.
    head = json.loads(
        (Path(bench.__file__).resolve().parent.parent / "memory/engine/models/leaf_head.json").read_text()
    )
    assert got["accuracy"] == head["training"]["cross_validated"]["clause"]["blend"]
    assert got["held_out"] == head["training"]["held_out"]["blend"]
    monkeypatch.setitem(sys.modules, "memory.engine.placement", types.SimpleNamespace())
    assert "error" in bench.leaf_accuracy_hook(labels, bow_embed)
