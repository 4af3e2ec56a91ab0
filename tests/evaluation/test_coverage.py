from evaluation.coverage import Reply, judge_coverage, judge_system_prompt, read_verdict


def test_read_verdict():
    assert read_verdict('{"covered": "yes"}') is True
    assert read_verdict("No.") is False
    assert read_verdict("yes and no") is None
    assert read_verdict(None) is None and read_verdict("") is None


def test_judge_coverage_counts_failures_as_not_covered():
    replies = iter([Reply('{"covered": "yes"}'), Reply(None, error="timeout"), Reply("maybe"), Reply("no")])
    seen = []

    def ask(system, user, schema, key):
        seen.append(user)
        assert key.startswith("judge|")
        return next(replies)

    summary, verdicts = judge_coverage(
        "identity/occupation: nurse", ["f1", "f2", "f3", "f4"], ask, key_prefix="judge|"
    )
    assert summary["facts"] == 4 and summary["covered"] == 1 and summary["judge_failed"] == 2
    assert summary["coverage"] == 0.25
    assert "identity/occupation: nurse" in seen[0] and "Fact: f1" in seen[0]
    assert "JSON only" in judge_system_prompt()
