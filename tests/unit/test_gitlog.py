import pytest

from orchestrator.backends.gitlog import parse_bisect_output

SHA1, SHA2 = "a" * 40, "b" * 40


def test_testing_state_from_real_git_output():
    out = "Bisecting: 4 revisions left to test after this (roughly 2 steps)\n[2149def3fa533b7b5190c20852530c771d10c587] c5\n"
    state = parse_bisect_output(out)
    assert (state.kind, state.revisions_left, state.steps_left) == ("testing", 4, 2)
    one = parse_bisect_output("Bisecting: 1 revision left to test after this (roughly 1 step)\n[x] c3\n")
    assert (one.revisions_left, one.steps_left) == (1, 1)


def test_found_state_names_the_culprit():
    out = f"{SHA1} is the first bad commit\ncommit {SHA1}\nAuthor: T <t@example.org>\n\n    c7\n"
    state = parse_bisect_output(out)
    assert state.kind == "found" and state.culprit == SHA1


def test_only_skipped_lists_the_candidates():
    out = (f"There are only 'skip'ped commits left to test.\nThe first bad commit could be any of:\n{SHA1}\n{SHA2}\n"
           "We cannot bisect more!\n")
    state = parse_bisect_output(out)
    assert state.kind == "only_skipped" and state.candidates == (SHA1, SHA2)


def test_unknown_output_is_an_error():
    with pytest.raises(ValueError, match="unrecognised git bisect output"):
        parse_bisect_output("fatal: something else")
