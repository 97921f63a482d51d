"""The kernel-shaped history's DAG (bench/history/shape.py): its shape and where it plants things."""

from __future__ import annotations

import pytest

from bench.history.shape import MIN_COMMITS, Kind, kernel_shape


def ancestors(shape) -> list[set[int]]:  # type: ignore[no-untyped-def]
    out: list[set[int]] = []
    for i, node in enumerate(shape.nodes):
        out.append({i}.union(*(out[p] for p in node.parents)))
    return out


@pytest.mark.parametrize("commits,seed", [(MIN_COMMITS, 3), (300, 1), (2000, 7)])
def test_a_kernel_shaped_history_is_a_main_line_of_merges_with_its_planted_changes_inside_topic_branches(commits,
                                                                                                          seed):
    shape = kernel_shape(commits, seed)
    assert len(shape) == commits and shape == kernel_shape(commits, seed)
    nodes = shape.nodes
    assert all(p < i for i, n in enumerate(nodes) for p in n.parents)
    main = [i for i, n in enumerate(nodes) if n.topic < 0]
    assert main[-1] == commits - 1 and all(nodes[i].parents[:1] == (j,) for j, i in zip(main, main[1:]))
    merges = [i for i in main if nodes[i].kind is Kind.MERGE]
    assert all(len(nodes[i].parents) == 2 and nodes[nodes[i].parents[1]].topic >= 0 for i in merges)
    assert commits < 300 or len(merges) >= len(main) / 2  # the main line is mostly merges
    anc = ancestors(shape)
    build = next(i for i, n in enumerate(nodes) if n.kind is Kind.BUILD_BREAK)
    fix = next(i for i, n in enumerate(nodes) if n.kind is Kind.BUILD_FIX)
    assert set(shape.build_broken) == {i for i in range(commits) if build in anc[i] and fix not in anc[i]}
    boot = next(i for i, n in enumerate(nodes) if n.kind is Kind.BOOT_BREAK)
    boot_fix = next(i for i, n in enumerate(nodes) if n.kind is Kind.BOOT_FIX)
    assert set(shape.boot_broken) == {i for i in range(commits) if boot in anc[i] and boot_fix not in anc[i]}
    assert len(shape.boot_broken) == 2
    topics = {nodes[i].topic for i in (build, boot, shape.culprit)}
    assert -1 not in topics and len(topics) == 3
    assert nodes[shape.culprit].kind is Kind.CULPRIT and shape.culprit in shape.real()
    for group in shape.same_image():  # a comment-only commit shares its first parent's image
        assert all(nodes[i].kind in (Kind.COMMENT, Kind.DOC) for i in group[1:])


def test_topic_branches_are_5_to_300_commits_some_based_on_older_points():
    shape = kernel_shape(20_000, 1)
    sizes: dict[int, int] = {}
    for n in shape.nodes:
        if n.topic >= 0:
            sizes[n.topic] = sizes.get(n.topic, 0) + 1
    assert min(sizes.values()) >= 5 and max(sizes.values()) <= 300 + 4  # a sub-branch adds its merge and 3 commits
    firsts = [next(i for i, n in enumerate(shape.nodes) if n.topic == t) for t in sizes]
    on_release = sum(not shape.nodes[i].parents for i in firsts)
    assert 0.3 < on_release / len(firsts) < 0.7
    assert sum(n.kind is Kind.REVERT for n in shape.nodes) == 2


def test_too_small_a_history_is_refused():
    with pytest.raises(ValueError, match=f"needs {MIN_COMMITS} commits at least"):
        kernel_shape(MIN_COMMITS - 1, 1)
