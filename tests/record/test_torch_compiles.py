"""Dynamo frame compiles recorded as function traces, on real `torch.compile` runs.

torch is the oracle: each record is one `_compile` that made a cache entry, and torch's own
`get_compilation_metrics()` (one per frame compile, torch/_dynamo/utils.py) and `counters`
must agree with the records. `backend="eager"` keeps Dynamo's guards and recompiles as they are,
without Inductor's seconds per compile.
"""

import pytest
import torch
from helpers import changes, record_kind
from torch._dynamo.utils import clear_compilation_metrics, counters, get_compilation_metrics

pytestmark = pytest.mark.backend("torch")

HERE = __file__


def line_of(text):
    with open(HERE) as source:
        return next(number for number, line in enumerate(source, 1) if text in line)


def compiles_with_a_cache_entry():
    """torch's own record of its frame compiles that made a cache entry: a skipped frame (no graph)
    has `has_guarded_code` but no `graph_op_count`; a failed one neither."""
    return [m for m in get_compilation_metrics() if m.has_guarded_code and m.graph_op_count is not None]


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()  # Clears the caches (not the counters nor the metrics).
    counters.clear()
    clear_compilation_metrics()
    yield
    torch._dynamo.reset()


def assert_torch_agrees(records):
    """The records are torch's compiles: one per compilation metric, in order, with its reason."""
    metrics = compiles_with_a_cache_entry()
    kept = records.records()
    assert [(r.name, r.origin) for r in kept] == [(m.co_name, "torch.compile") for m in metrics]
    assert [r.backend_reasons[0] if r.backend_reasons else None for r in kept] == \
        [m.recompile_reason for m in metrics]
    assert counters["stats"]["unique_graphs"] == len(kept)


def test_a_second_size_recompiles_and_later_sizes_reuse_the_dynamic_compile(records):
    @torch.compile(backend="eager")
    def scale(x):
        return x * 2

    for size in (8, 5, 3, 11):
        scale(torch.ones(size))
    kept = records.records()
    # torch's automatic dynamic shapes: the second size recompiles with dimension 0 dynamic,
    # and the sizes after it reuse that compile.
    assert [record_kind(r) for r in kept] == ["first", "retrace"]
    assert changes(kept[1]) == ["x: dim 0 8 -> 5"]
    assert kept[1].backend_reasons == ("0/0: tensor 'x' size mismatch at index 0. expected 8, actual 5",)
    assert_torch_agrees(records)


def test_a_changing_python_int_recompiles_once_with_its_values(records):
    @torch.compile(backend="eager")
    def shift(x, n):
        return x + n

    for n in (2, 3, 4, 5):
        shift(torch.ones(4), n)
    kept = records.records()
    assert [record_kind(r) for r in kept] == ["first", "retrace"]
    assert changes(kept[1]) == ["n: 2 -> 3"]
    assert_torch_agrees(records)


def test_a_rank_change_names_both_shapes(records):
    @torch.compile(backend="eager")
    def total(x):
        return x.sum()

    total(torch.ones(4))
    total(torch.ones(4, 2))
    assert changes(records.records()[1]) == ["x: rank 1 -> 2 (torch.float32[None] -> torch.float32[4,2])"]
    assert_torch_agrees(records)


def test_each_compile_costs_its_phases_as_torch_measured_them(records):
    @torch.compile(backend="eager")
    def scale(x):
        return x * 2

    scale(torch.ones(3))
    (record,) = records.records()
    (metric,) = get_compilation_metrics()
    assert record.phases["compile"] == pytest.approx(metric.backend_compile_time_s)
    whole = metric.entire_frame_compile_time_s
    assert record.phases["trace"] + record.phases["compile"] == pytest.approx(whole)
    assert record.duration >= metric.entire_frame_compile_time_s


def test_a_graph_break_compiles_the_rest_as_a_frame_of_its_own(records):
    @torch.compile(backend="eager")
    def noisy(x):
        y = x + 1
        print("between")  # A graph break: Dynamo compiles the code after it as a resume frame.
        return y * 2

    noisy(torch.ones(3))
    first, rest = records.records()
    assert first.name == "noisy" and rest.name.startswith("torch_dynamo_resume_in_noisy_at_")
    # The break is named in the compile it ended, where it happened, as torch words its kind.
    ((what, where),) = first.graph_breaks
    assert (where.path, where.line) == (HERE, line_of("# A graph break"))
    assert counters["graph_break"] and any(what in reason for reason in counters["graph_break"])
    assert rest.graph_breaks == ()
    assert_torch_agrees(records)
