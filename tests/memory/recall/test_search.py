"""Query embedding in search.py runs with one torch intra-op thread, restored afterwards."""

import threading

import numpy as np
import pytest
import torch

from memory.recall.search import one_intraop_thread, search_many


class _Recording:
    """An embedder double that records torch's intra-op thread count while it embeds."""

    dim = 4

    def __init__(self):
        self.seen: list[int] = []

    def embed(self, texts):
        self.seen.append(torch.get_num_threads())
        return np.ones((len(texts), self.dim), dtype="float32")


class _NoIndex:
    def search_dense(self, vectors, scope, *, limit):
        return [[] for _ in vectors]


@pytest.fixture
def two_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def test_query_embedding_runs_on_one_intraop_thread_and_restores_the_setting(two_threads):
    emb = _Recording()
    search_many(_NoIndex(), emb, None, ["a", "b", "c"], limit=3, method="dense")
    assert emb.seen == [1]
    assert torch.get_num_threads() == 2


def test_a_request_thread_embeds_on_one_intraop_thread_too(two_threads):
    emb = _Recording()
    t = threading.Thread(
        target=search_many, args=(_NoIndex(), emb, None, ["a", "b"]), kwargs={"limit": 3, "method": "dense"}
    )
    t.start()
    t.join(30)
    assert emb.seen == [1]
    assert torch.get_num_threads() == 2
    with one_intraop_thread():
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == 2


def test_the_setting_is_restored_when_embedding_fails(two_threads):
    class Broken(_Recording):
        def embed(self, texts):
            raise RuntimeError("model gone")

    with pytest.raises(RuntimeError):
        search_many(_NoIndex(), Broken(), None, ["a"], limit=3, method="dense")
    assert torch.get_num_threads() == 2
