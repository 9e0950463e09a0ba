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


def frame_name(record):
    """The name torch gives the frame a record compiled: a frame after a graph break is recorded as
    its function's, with the break's line (torch/_dynamo/resume_execution.py names it)."""
    after = record.resumed_after
    return record.name if after is None else f"torch_dynamo_resume_in_{record.name}_at_{after.line}"


def assert_torch_agrees(records):
    """The records are torch's compiles: one per compilation metric, in order, with its reason."""
    metrics = compiles_with_a_cache_entry()
    kept = records.records()
    assert [(frame_name(r), r.origin) for r in kept] == [(m.co_name, "torch.compile") for m in metrics]
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
    # The frame after the break is recorded as a part of `noisy`: its name and `def`, its break's line.
    assert first.name == rest.name == "noisy" and first.definition == rest.definition
    assert (rest.resumed_after.path, rest.resumed_after.line) == (HERE, line_of("# A graph break"))
    assert [r.reason.value for r in (first, rest)] == ["first_trace", "part_of_trace"]
    # The break is named in the compile it ended, where it happened, as torch words its kind.
    ((what, where),) = first.graph_breaks
    assert (where.path, where.line) == (HERE, line_of("# A graph break"))
    assert counters["graph_break"] and any(what in reason for reason in counters["graph_break"])
    assert rest.graph_breaks == ()
    assert_torch_agrees(records)


def test_an_int_that_stays_symbolic_is_relaxed_and_a_range_bound_is_not(records):
    # Measured with torch 2.14.1 (automatic dynamic shapes): `n` in `x + n` is made dynamic by its
    # recompile (the new compile passes other values); `start` as a Python `range` bound stays
    # guarded by its exact value (`start == 1`), so every new value recompiles, also with dynamic=True.
    @torch.compile(backend="eager")
    def shift(x, n):
        return x + n

    @torch.compile(backend="eager", dynamic=True)
    def accumulate(x, start, end):
        for i in range(start + 1, end):
            x[i] += x[i - 1]
        return x

    for n in (2, 3, 4):
        shift(torch.ones(4), n)
    for start in range(4):
        accumulate(torch.arange(10.0), start, 10)
    shifts = [r for r in records.records() if r.name == "shift"]
    sums = [r for r in records.records() if r.name == "accumulate"]
    assert [r.relaxed for r in shifts] == [None, True]
    assert [r.relaxed for r in sums] == [None, False, False, False]
    assert [_guard_reason(r) for r in sums[1:]] == ["start == 0", "start == 1", "start == 2"]
    assert changes(sums[3]) == ["start: 2 -> 3"]
    assert_torch_agrees(records)


def test_with_dynamic_false_the_setting_not_the_code_keeps_an_int_static(records):
    # torch 2.14.1: `dynamic=False` turns automatic dynamic shapes off while it compiles; `n`
    # recompiles per value, which traceguard does not read as a value the code needs concrete.
    @torch.compile(backend="eager", dynamic=False)
    def shift(x, n):
        return x + n

    for n in (2, 3, 4):
        shift(torch.ones(4), n)
    kept = records.records()
    assert [record_kind(r) for r in kept] == ["first", "retrace", "retrace"]
    assert [r.relaxed for r in kept] == [None, None, None]
    assert_torch_agrees(records)


def test_a_bool_flag_is_guarded_by_value_once_per_value(records):
    @torch.compile(backend="eager", dynamic=True)
    def gate(x, flag):
        return x * 2 if flag else x * 3

    for flag in (True, False, True, False):
        gate(torch.ones(3), flag)
    kept = records.records()
    # Both compiles are kept: switching back reuses them (torch 2.14.1).
    assert [record_kind(r) for r in kept] == ["first", "retrace"]
    assert changes(kept[1]) == ["flag: True -> False"] and kept[1].relaxed is None
    assert_torch_agrees(records)


@pytest.mark.parametrize(("second", "expected", "reason"), [
    (lambda: torch.ones(4, 4, requires_grad=True), "x: requires_grad False -> True",
     "tensor 'x' requires_grad mismatch. expected requires_grad=0"),
    (lambda: torch.ones(4, 4).t(), "x: stride 0 4 -> 1",
     "tensor 'x' stride mismatch at index 0. expected 4, actual 1"),
    (lambda: torch.ones(4, 4, dtype=torch.float64), "x: dtype Float -> Double",
     "tensor 'x' dtype mismatch. expected Float, actual Double"),
    (lambda: torch.ones(4, 4, device="meta"), "x: device CPU -> Meta",
     "tensor 'x' dispatch key set mismatch. expected DispatchKeySet(CPU, BackendSelect, ADInplaceOrView, "
     "AutogradCPU), actual DispatchKeySet(Meta, BackendSelect, ADInplaceOrView, AutogradMeta)"),
], ids=["requires_grad", "stride", "dtype", "device"])
def test_a_tensor_guard_names_the_argument_and_the_property(records, second, expected, reason):
    # torch 2.14.1's words for each tensor check (torch/csrc/dynamo/guards.cpp), from real runs.
    @torch.compile(backend="eager")
    def double(x):
        return x * 2

    double(torch.ones(4, 4))
    double(second())
    first, recompile = records.records()
    assert _guard_reason(recompile) == reason
    assert changes(recompile) == [expected]
    assert_torch_agrees(records)


def _guard_reason(record):
    from traceguard._compat.torch.guard_reasons import reason_lines

    return reason_lines(record.backend_reasons[0])


def test_a_resume_frame_names_the_function_it_continues_and_its_break(records):
    from traceguard._compat.torch.resume import resumed

    @torch.compile(backend="eager")
    def twice(x):
        y = x + 1
        print("one")  # The first break.
        y = y * 2
        print("two")  # The second break.
        return y - 1

    twice(torch.ones(3))
    names = [metric.co_name for metric in compiles_with_a_cache_entry()]  # torch's own names.
    assert resumed(names[0]) is None
    assert [resumed(name) for name in names[1:]] == [
        ("twice", line_of("# The first break.")),
        ("twice", line_of("# The second break.")),  # Named after `twice`, not after a resume.
    ]


def test_a_function_broken_twice_is_one_function_of_three_frames_and_recompiles_each(records):
    @torch.compile(backend="eager")
    def twice(x):
        y = x + 1
        print("one")  # Its first break.
        y = y * 2
        print("two")  # Its second break.
        return y - 1

    twice(torch.ones(3))
    twice(torch.ones(4))  # A new size: torch recompiles each of the three frames.
    kept = records.records()
    first, second = line_of("# Its first break."), line_of("# Its second break.")
    assert [(r.name, None if r.resumed_after is None else r.resumed_after.line) for r in kept] == [
        ("twice", None), ("twice", first), ("twice", second)] * 2
    assert len({(r.qualname, r.definition) for r in kept}) == 1  # One function, `twice`'s `def`.
    # Each frame's first compile is part of compiling `twice`; no retrace without torch's recompile.
    assert [r.reason.value for r in kept[:3]] == ["first_trace", "part_of_trace", "part_of_trace"]
    assert [record_kind(r) for r in kept[3:]] == ["retrace"] * 3
    assert [changes(r) for r in kept[3:]] == [["x: dim 0 3 -> 4"], ["y: dim 0 3 -> 4"], ["y: dim 0 3 -> 4"]]
    assert {r.object_number for r in kept} == {1} and {r.objects for r in kept} == {1}
    assert_torch_agrees(records)
    # torch's own key of each frame: a frame id per code, a compile id per recompile of it.
    assert [str(m.compile_id) for m in compiles_with_a_cache_entry()] == ["0/0", "1/0", "2/0", "0/1", "1/1",
                                                                           "2/1"]


def test_a_wrapper_taking_star_args_has_them_as_its_signature(records):
    # A decorator's wrapper (Keras's `error_handler` around `Layer.__call__`) takes `*args, **kwargs`;
    # torch's guards name them (`args[0]`).
    @torch.compile(backend="eager")
    def wrapper(*args, **kwargs):
        return args[0] * kwargs.get("scale", 2)

    wrapper(torch.ones(3))
    wrapper(torch.ones(4))
    first, second = records.records()
    assert list(first.signature) == ["args", "kwargs"]
    assert changes(second) == ["args[0]: dim 0 3 -> 4"]
    assert_torch_agrees(records)
