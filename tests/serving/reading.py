"""Turns read by ``serving.syntax`` for the syntax and naming tests: each clause of a turn with
what the syntax step found of it."""

from __future__ import annotations

from memory.engine.segment import segment


def read(syntax, content):
    """``content`` read alone: ``[(clause text, ClauseSyntax), ...]``."""
    clauses = segment(content)
    found = syntax.analyse([(content, [(c.start, c.end) for c in clauses], "")])[0]
    return [(c.text, s) for c, s in zip(clauses, found, strict=True)]


def read_reply(syntax, before, content, own=""):
    """``content`` read after the other speaker's turn ``before`` (and the speaker's ``own`` before that)."""
    clauses = segment(content)
    found = syntax.analyse([(content, [(c.start, c.end) for c in clauses], before, own)])[0]
    return [(c.text, s) for c, s in zip(clauses, found, strict=True)]
