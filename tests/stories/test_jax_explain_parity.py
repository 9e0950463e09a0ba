"""Parity with JAX's own explanation (#31): what `jax_explain_cache_misses` names, traceguard names too.

The slow test runs each JAX program of the corpus (`tests/programs/`, `backend: jax`) once, with
JAX's explanations on and under `traceguard.watch(trace_file=...)`, and holds the trace file's
`function_trace` records against JAX's messages (`jax_explain.parity_gaps`). The quick tests read
messages JAX 0.10.2 wrote (captured from real runs) with `jax_explain`'s parser.
"""

import concurrent.futures
import dataclasses
import importlib.util
import os
import pathlib
import subprocess
import sys

import pytest
from jax_explain import (
    RUNNER,
    AbstractValue,
    Difference,
    Expectation,
    expectations,
    function_traces,
    parameter_of_argument_name,
    parameter_of_input_path,
    parity_gaps,
    parse_abstract_value,
    parse_miss,
    read_json_lines,
)

import traceguard

pytestmark = pytest.mark.backend("jax")

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROGRAMS_DIR = ROOT / "tests" / "programs"
TIMEOUT_SECONDS = 60


def _load_check():
    spec = importlib.util.spec_from_file_location("corpus_check", PROGRAMS_DIR / "check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


check = _load_check()
JAX_PROGRAMS = [program for program in sorted(PROGRAMS_DIR.glob("*.py"))
                if not program.name.startswith("_") and program.name != "check.py"
                and check.parse_expected(program)["backend"] == "jax"]

_CLOSEST = "  all previously seen cache keys differ. For the closest previous key:"
_WEAK_TYPES = "https://docs.jax.dev/en/latest/type_promotion.html#weak-types"
_STATIC = "<class 'jax._src.tree_util.Static'> with pytree metadata Static(val="


def _message(site, function, *lines):
    """A message of jax 0.10.2 for a function seen before: its call site, the function and its
    `def` site (`"step defined at kw.py:2"`), and the closest key's difference lines."""
    return "\n".join([f"TRACING CACHE MISS at {site}:", f"  for {function}", _CLOSEST, *lines])


# jax 0.10.2's messages for this function, called as the comments say (one message per call).
#   @jax.jit
#   def step(x, *rest, scale=1.0, **options): return x
KW_PARAMETERS = [["x", "POSITIONAL_OR_KEYWORD"], ["rest", "VAR_POSITIONAL"], ["scale", "KEYWORD_ONLY"],
                 ["options", "VAR_KEYWORD"]]
KW_MESSAGES = [
    # step(np.ones(2), np.ones(2), scale=1.0, lr=0.1)
    "TRACING CACHE MISS at kw.py:5 (<module>):\n  never seen function:\n"
    "    step id=140066294844928 defined at kw.py:2",
    # step(np.ones(2), np.ones(3), scale=1.0, lr=0.1)
    _message("kw.py:6 (<module>)", "step defined at kw.py:2", "  different input types:",
             "  * at rest[0], now f32[3] and before f32[2]"),
    # ... scale=np.float32(1.0) ...
    _message("kw.py:7 (<module>)", "step defined at kw.py:2", "  different input types:",
             "  * at scale, now f32[]{weak_type=False} and before f32[]{weak_type=True}" + _WEAK_TYPES),
    # ... lr=np.float32(0.1)
    _message("kw.py:8 (<module>)", "step defined at kw.py:2", "  different input types:",
             "  * at options['lr'], now f32[]{weak_type=False} and before "
             "f32[]{weak_type=True}" + _WEAK_TYPES),
    # ..., momentum=0.9)
    _message("kw.py:9 (<module>)", "step defined at kw.py:2", "  different input pytree:",
             "  * at input path [1], now <class 'dict'> with 3 children and before <class 'dict'> with 2 "
             "children, so the numbers of children do not match, with the symmetric difference of key sets: "
             "{'momentum'}"),
]
TYPED = {"spec": "tensor", "dtype": "float32", "dims": [], "type_name": "", "weak_type": False}
# What traceguard's trace file recorded in the same run (the fields read; `text` as written).
KW_CHANGES = [
    [],
    [{"argument": {"parameter": "rest", "keys": [0]}, "aspect": "dim", "new": 3, "axis": 0,
      "text": "rest[0]: dim 0 2 -> 3"}],
    [{"argument": {"parameter": "scale", "keys": []}, "aspect": "weak_type", "new": TYPED, "axis": None,
      "text": "scale: weakly typed float32[] -> float32[]"}],
    [{"argument": {"parameter": "lr", "keys": []}, "aspect": "weak_type", "new": TYPED, "axis": None,
      "text": "lr: weakly typed float32[] -> float32[]"}],
    [{"argument": {"parameter": "momentum", "keys": []}, "aspect": "added",
      "new": dict(TYPED, weak_type=True), "axis": None, "text": "momentum: added (weakly typed float32[])"}],
]

# From the corpus's programs (tests/programs/), and from `step` above and
#   @jax.jit
#   def g(a, b=None): return a
LAMBDA = "tests/programs/jit_lambda_created_in_loop.py"
NEVER_SEEN = (f"TRACING CACHE MISS at {LAMBDA}:42:12 (g_inner_jitted_poorly):\n  never seen function:\n"
              f"    <lambda> id=140445996453216 defined at {LAMBDA}:42")
REDEFINED = NEVER_SEEN + ("\n  but seen another function defined on the same line; maybe the function is\n"
                          "  being re-defined repeatedly, preventing caching?")
STATIC_VALUE = _message(
    "tests/programs/keras_jax_static_slice_position.py:57:15 (CustomModel.call)",
    "jitted_call defined at tests/programs/keras_jax_static_slice_position.py:49",
    "  different input pytree:",
    f"  * at input path [0][2], now {_STATIC}3) and before {_STATIC}2), so the pytree node metadata "
    "does not match")
STATIC_IDENTITY = _message(
    "tests/programs/jit_static_self_hash_without_eq.py:55:10 (<module>)",
    "f defined at tests/programs/jit_static_self_hash_without_eq.py:44", "  different input pytree:",
    f"  * at input path [0][0], now {_STATIC}<__main__.MyClass object at 0x7f0bc8755b10>) and before "
    f"{_STATIC}<__main__.MyClass object at 0x7f0bcc041510>), so the pytree node metadata does not match")
NONE_ARGUMENT = _message(
    "tests/programs/jit_optional_argument_none.py:44:6 (<module>)",
    "f defined at tests/programs/jit_optional_argument_none.py:34", "  different input pytree:",
    "  * at input path [0][1], now <class 'NoneType'> and before pytree leaf, so their Python types differ")
RANK = _message("shapes.py:9 (<module>)", "step defined at shapes.py:3", "  different input types:",
                "  * at x, now f32[2,5,1]({}) and before f32[2,3]({})")
DTYPE_AND_DIM = _message("shapes.py:10 (<module>)", "step defined at shapes.py:3", "  different input types:",
                         "  * at x, now f16[2,5] and before f32[2,3]")
DICT_KEYS = _message("shapes.py:11 (<module>)", "step defined at shapes.py:3", "  different input pytree:",
                     "  * at input path [0][1], now <class 'dict'> with 2 children and before <class 'dict'> "
                     "with 1 child, so the numbers of children do not match, with the symmetric difference "
                     "of key sets: {'m'}")
MORE_POSITIONAL = _message("shapes.py:22 (<module>)", "g defined at shapes.py:18",
                           "  different input pytree:",
                           "  * at input path [0], now tuple of length 2 and before tuple of length 1, so "
                           "the lengths do not match")
CONTEXT = _message("shapes.py:25:4 (<module>)", "g defined at shapes.py:18",
                   "  Tracing context doesn't match, e.g. due to config or context manager.",
                   "  * jax_default_matmul_precision differs: now float32 and before None")
STATIC_FIELD = _message(  # jax 0.10.2, `f(Config(w, "b"), batch)` after `f(Config(w, "a"), batch)` (#38).
    "dc.py:12 (<module>)", "f defined at dc.py:8", "  different input pytree:",
    "  * at input path [0][0], now <class '__main__.Config'> with pytree metadata ('b',) and before "
    "<class '__main__.Config'> with pytree metadata ('a',), so the pytree node metadata does not match")
POSITIONAL = "POSITIONAL_OR_KEYWORD"


def _last_line(text):
    return text.splitlines()[-1].strip()


def test_parse_miss_reads_a_never_seen_function_and_a_redefined_one():
    first, again = parse_miss(NEVER_SEEN), parse_miss(REDEFINED)
    assert (first.function, first.definition, first.never_seen, first.redefined, first.differences) == (
        "<lambda>", "tests/programs/jit_lambda_created_in_loop.py:42", True, False, ())
    assert first.call_site == "tests/programs/jit_lambda_created_in_loop.py:42:12 (g_inner_jitted_poorly)"
    assert (again.never_seen, again.redefined) == (True, True)


@pytest.mark.parametrize("text, difference", [
    (KW_MESSAGES[2], Difference("types", "scale", "f32[]{weak_type=False}", "f32[]{weak_type=True}", "",
                                _last_line(KW_MESSAGES[2]))),
    (RANK, Difference("types", "x", "f32[2,5,1]({})", "f32[2,3]({})", "", _last_line(RANK))),
    (STATIC_VALUE, Difference("pytree", "[0][2]", f"{_STATIC}3)", f"{_STATIC}2)",
                              "the pytree node metadata does not match", _last_line(STATIC_VALUE))),
    (NONE_ARGUMENT, Difference("pytree", "[0][1]", "<class 'NoneType'>", "pytree leaf",
                               "their Python types differ", _last_line(NONE_ARGUMENT))),
    (CONTEXT, Difference("context", "jax_default_matmul_precision", "float32", "None", "",
                         "* jax_default_matmul_precision differs: now float32 and before None")),
], ids=["weak_type", "rank", "static", "none", "context"])
def test_parse_miss_reads_each_kind_of_difference(text, difference):
    miss = parse_miss(text)
    assert not miss.never_seen and miss.differences == (difference,)


def test_parse_miss_rejects_another_message():
    with pytest.raises(ValueError, match="Not a TRACING CACHE MISS message: 'Compiling f'"):
        parse_miss("Compiling f")
    with pytest.raises(ValueError, match="Unreadable types difference: '  \\* x changed'"):
        parse_miss(RANK.replace("* at x, now f32[2,5,1]({}) and before f32[2,3]({})", "* x changed"))


@pytest.mark.parametrize("text, value", [
    ("f32[]{weak_type=True}", AbstractValue("f32", (), True)),
    ("f32[2,5,1]({})", AbstractValue("f32", ("2", "5", "1"), None)),
    ("bf16[8@x,4]", AbstractValue("bf16", ("8", "4"), None)),
    ("Tok", None),
])
def test_parse_abstract_value(text, value):
    assert parse_abstract_value(text) == value


def test_argument_names_and_input_paths_map_to_parameters():
    assert parameter_of_argument_name("x", KW_PARAMETERS) == {"x"}
    assert parameter_of_argument_name("rest[0]", KW_PARAMETERS) == {"rest"}
    assert parameter_of_argument_name("options['lr']", KW_PARAMETERS) == {"lr"}  # traceguard: by its key
    assert parameter_of_argument_name("x['ids'][0]", KW_PARAMETERS) == {"x"}
    # Unbound arguments: JAX says `args[i]`, traceguard `arg{i}` (or the parameter's name).
    assert parameter_of_argument_name("args[1]", [["a", "POSITIONAL_OR_KEYWORD"]]) == {"arg1"}
    assert parameter_of_argument_name("args[0]", None) == {"arg0"}
    method = [["self", POSITIONAL], ["x", POSITIONAL], ["pos", POSITIONAL]]
    assert parameter_of_input_path("[0][2]", method) == {"pos", "arg2"}
    assert parameter_of_input_path("[0][3]['ids']", KW_PARAMETERS) == {"rest", "arg3"}
    assert parameter_of_input_path("[1]['scale'][0]", KW_PARAMETERS) == {"scale"}
    assert parameter_of_input_path("[1]", KW_PARAMETERS) is None


def test_expectations_name_the_parameter_aspect_axis_and_new_side():
    assert expectations(parse_miss(REDEFINED), None) == [
        Expectation("never seen function (re-defined repeatedly?)", None, frozenset({"function_object"}))]
    assert expectations(parse_miss(NEVER_SEEN), None)[0].first_trace
    words = "* at x, now f16[2,5] and before f32[2,3]"
    assert expectations(parse_miss(DTYPE_AND_DIM), [["x", "POSITIONAL_OR_KEYWORD"]]) == [
        Expectation(words, frozenset({"x"}), frozenset({"dtype"}), now="f16"),
        Expectation(words, frozenset({"x"}), frozenset({"dim"}), 1, "5")]
    assert [e.aspects for e in expectations(parse_miss(RANK), None)] == [{"rank"}]
    method = [["self", POSITIONAL], ["x", POSITIONAL], ["pos", POSITIONAL]]
    static = expectations(parse_miss(STATIC_VALUE), method)
    assert (static[0].parameters, static[0].now) == ({"pos", "arg2"}, "3")
    assert expectations(parse_miss(STATIC_IDENTITY), [["self", "POSITIONAL_OR_KEYWORD"]])[0].aspects == {
        "value", "identity", "structure"}
    assert expectations(parse_miss(NONE_ARGUMENT), [["logits", "POSITIONAL_OR_KEYWORD"],
                                                    ["x_in", "POSITIONAL_OR_KEYWORD"]])[0][1:3] == (
        frozenset({"x_in", "arg1"}), frozenset({"structure"}))
    assert expectations(parse_miss(DICT_KEYS), KW_PARAMETERS)[0].aspects == {"added", "removed", "structure"}
    more = expectations(parse_miss(MORE_POSITIONAL), [["a", POSITIONAL], ["b", POSITIONAL]])
    assert more[0][1:3] == (frozenset({"b", "arg1"}), frozenset({"added", "removed", "call_structure"}))
    assert expectations(parse_miss(KW_MESSAGES[4]), KW_PARAMETERS)[0][1:3] == (
        frozenset({"momentum"}), frozenset({"added", "removed", "call_structure"}))
    assert expectations(parse_miss(STATIC_FIELD), [["cfg", POSITIONAL], ["batch", POSITIONAL]])[0][1:3] == (
        frozenset({"cfg", "arg0"}), frozenset({"static_field", "structure"}))
    assert expectations(parse_miss(CONTEXT), None) == [Expectation(
        "* jax_default_matmul_precision differs: now float32 and before None",
        frozenset({"jax_default_matmul_precision"}), frozenset({"context"}), now="float32")]


def _records(changes, kinds=None, function="step", definition=("kw.py", 2)):
    kinds = kinds or ["trace"] + ["retrace"] * (len(changes) - 1)
    return [{"type": "header", "version": 2}] + [
        {"type": "function_trace", "qualname": function, "event": {
            "serial": serial, "kind": kind, "function": function, "changes": change_list,
            "definition": {"path": definition[0], "line": definition[1]}}}
        for serial, (kind, change_list) in enumerate(zip(kinds, changes), start=1)]


def _logged(messages, parameters=KW_PARAMETERS):
    return [{"message": message, "via": "_trace_for_jit", "parameters": parameters} for message in messages]


def test_parity_holds_for_a_real_run(tmp_path):
    gaps, outside = parity_gaps(_logged(KW_MESSAGES), _records(KW_CHANGES), str(tmp_path))
    assert (gaps, outside) == ([], [])


def test_parity_gaps_name_jax_s_words_and_traceguard_s_record(tmp_path):
    wrong = [dict(KW_CHANGES[2][0], aspect="dtype", text="scale: dtype float32 -> float32")]
    other_axis = [dict(KW_CHANGES[1][0], axis=1)]
    changes = [[], other_axis, wrong, [], KW_CHANGES[4]]
    gaps, _ = parity_gaps(_logged(KW_MESSAGES), _records(changes), str(tmp_path))
    assert [(gap.miss, gap.jax_words, gap.expected, gap.recorded) for gap in gaps] == [
        (2, "* at rest[0], now f32[3] and before f32[2]", "rest: dim (axis 0) now 3",
         "#2 retrace: rest[0]: dim 0 2 -> 3"),
        (3, _last_line(KW_MESSAGES[2]), "scale: weak_type now False",
         "#3 retrace: scale: dtype float32 -> float32"),
        (4, _last_line(KW_MESSAGES[3]), "lr: weak_type now False", "#4 retrace: no changes")]
    assert str(gaps[2]).startswith("step miss 4: JAX says \"* at options['lr'], now f32[]{weak_type=False} ")


def test_parity_gaps_count_a_missing_trace_and_one_jax_did_not_explain(tmp_path):
    gaps, _ = parity_gaps(_logged(KW_MESSAGES[:2]), _records(KW_CHANGES[:1]), str(tmp_path))
    assert [(gap.miss, gap.recorded) for gap in gaps] == [(2, "no trace")]
    gaps, _ = parity_gaps(_logged(KW_MESSAGES[:1]), _records(KW_CHANGES[:2]), str(tmp_path))
    assert [(gap.miss, gap.jax_words, gap.recorded) for gap in gaps] == [
        (0, "(no miss explained)", "#2 retrace: rest[0]: dim 0 2 -> 3")]


def test_parity_gaps_leave_out_library_helpers_and_need_a_new_object_when_jax_suspects_one(tmp_path):
    helper = REDEFINED.replace("tests/programs/jit_lambda_created_in_loop.py:42", f"{os.__file__}:490")
    gaps, outside = parity_gaps(_logged([helper]), [], str(tmp_path))
    assert gaps == [] and [miss.function for miss in outside] == ["<lambda>"]
    lambdas = _records([[], []], ["trace", "trace"], "<lambda>", (LAMBDA, 42))
    for number, record in enumerate(lambdas[1:], start=1):
        record["event"]["object_number"] = number
    gaps, _ = parity_gaps(_logged([NEVER_SEEN, REDEFINED]), lambdas, str(tmp_path))
    assert [(gap.miss, gap.expected) for gap in gaps] == [(2, "any argument: function_object")]
    # JAX's "re-defined?" guess for what traceguard records as its code's first object: withdrawn.
    lambdas[2]["event"]["object_number"] = 1
    assert parity_gaps(_logged([NEVER_SEEN, REDEFINED]), lambdas, str(tmp_path))[0] == []


def test_a_tracing_context_difference_needs_the_context_value_by_name(tmp_path):
    first = ("TRACING CACHE MISS at shapes.py:21 (<module>):\n  never seen function:\n"
             "    g id=140603749230016 defined at shapes.py:18")
    logged = _logged([first, CONTEXT], [["a", POSITIONAL]])
    precision = {"argument": {"parameter": "jax_default_matmul_precision", "keys": []}, "aspect": "context",
                 "old": "None", "new": "float32", "axis": None}
    records = _records([[], [precision]], function="g", definition=("shapes.py", 18))
    assert parity_gaps(logged, records, str(tmp_path))[0] == []
    unnamed = _records([[], []], function="g", definition=("shapes.py", 18))
    gaps, _ = parity_gaps(logged, unnamed, str(tmp_path))
    assert [(gap.expected, gap.recorded) for gap in gaps] == [
        ("jax_default_matmul_precision: context now float32", "#2 retrace: no changes")]


# jax 0.10.2's messages for the body of an eager `lax.scan` started from a Python int carry (#38):
#   def total(xs):
#       def body(carry, x): return carry + x, carry
#       return jax.lax.scan(body, 0, xs)
#   total(jnp.ones(3, jnp.float32))  # twice
BODY_FIRST = ("TRACING CACHE MISS at bodies.py:4:11 (total):\n  never seen function:\n"
              "    body id=139703624454272 defined at bodies.py:3")
BODY_CARRY = _message("bodies.py:4:11 (total)", "body defined at bodies.py:3", "  different input types:",
                      "  * at carry, now f32[]{weak_type=False} and before i32[]{weak_type=True}"
                      + _WEAK_TYPES)
BODY_AGAIN = BODY_FIRST + ("\n  but seen another function defined on the same line; maybe the function is\n"
                           "  being re-defined repeatedly, preventing caching?")


def test_a_body_s_misses_are_held_against_its_records(tmp_path):
    # JAX explains a body's miss from its control flow (`_create_jaxpr`), without a jitted
    # signature: the argument names are the body's parameters.
    logged = [{"message": message, "via": "_create_jaxpr", "parameters": None}
              for message in (BODY_FIRST, BODY_CARRY, BODY_AGAIN, BODY_CARRY)]
    dtype = {"argument": {"parameter": "carry", "keys": []}, "aspect": "dtype", "old": "int32",
             "new": "float32", "axis": None, "text": "carry: dtype int32 -> float32"}
    new_object = {"argument": {"parameter": "body", "keys": []}, "aspect": "function_object", "old": 1,
                  "new": 2, "axis": None, "text": "body: function object #1 -> #2"}
    records = _records([[], [dtype], [new_object], [dtype]], ["trace", "retrace", "retrace", "retrace"],
                       "body", ("bodies.py", 3))
    assert parity_gaps(logged, records, str(tmp_path)) == ([], [])
    gaps, _ = parity_gaps(logged, records[:4], str(tmp_path))  # The header, 3 traces: one missing.
    assert [(gap.function, gap.miss, gap.recorded) for gap in gaps] == [("body", 4, "no trace")]


@dataclasses.dataclass
class Run:
    logged: list
    records: list
    status: object
    output: str


def _run(program, out_dir):
    out_dir.mkdir(parents=True, exist_ok=True)
    trace_file, misses_file = out_dir / "trace.jsonl", out_dir / "misses.jsonl"
    source = str(pathlib.Path(traceguard.__file__).resolve().parent.parent)
    env = dict(os.environ, KERAS_BACKEND="jax", TF_CPP_MIN_LOG_LEVEL="3",
               PYTHONPATH=os.pathsep.join(filter(None, [source, os.environ.get("PYTHONPATH")])))
    script = str(program.relative_to(ROOT)) if program.is_relative_to(ROOT) else str(program)
    command = [sys.executable, "-c", RUNNER, script, str(trace_file), str(misses_file)]
    try:
        completed = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                                   timeout=TIMEOUT_SECONDS)
        status, output = completed.returncode, completed.stdout + completed.stderr
    except subprocess.TimeoutExpired as error:
        status, output = "timeout", f"timed out after {TIMEOUT_SECONDS} s: {error.stderr or ''}"
    return Run(read_json_lines(misses_file), read_json_lines(trace_file), status, output)


@pytest.fixture(scope="module")
def runs(request, tmp_path_factory):
    """The selected programs' runs, two at a time (most of each is importing JAX and Keras)."""
    selected = [item.callspec.params["program"] for item in request.session.items
                if getattr(item, "originalname", None) == "test_traceguard_names_every_difference_jax_names"]
    out_dir = tmp_path_factory.mktemp("parity")
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futures = {program: pool.submit(_run, program, out_dir / program.stem) for program in selected}
        yield futures
        for future in futures.values():
            future.cancel()


@pytest.mark.slow
@pytest.mark.parametrize("program", JAX_PROGRAMS, ids=[program.stem for program in JAX_PROGRAMS])
def test_traceguard_names_every_difference_jax_names(program, runs):
    expected = check.parse_expected(program)
    run = runs[program].result()
    assert run.status == (1 if expected.get("raises") else 0), run.output[-3000:]
    gaps, outside = parity_gaps(run.logged, run.records, str(ROOT))
    # The harness saw JAX's explanations: one per trace of the program's function.
    names = {name.rsplit(".", 1)[-1] for name in expected["functions"]}
    explained = [line for line in run.logged if parse_miss(line["message"]).function in names]
    assert len(explained) == int(expected["traces"]), [line["message"] for line in run.logged]
    assert not gaps, "\n".join(str(gap) for gap in gaps)


# What JAX keys besides abstract values (#38), each run as a program under JAX's explanation:
# (program, the number of misses JAX explains for `f`, what traceguard records for each).
KEY_PROGRAMS = {
    "call_structure": ("""
import jax
@jax.jit
def f(x, y=1):
    return x + y
f(1, 2)
f(1, y=2)
f(x=2, y=3)
f(1, 2)
""", 3, [[], ["y: passed positionally -> by keyword"], ["x: passed positionally -> by keyword"]]),
    "static_field_and_dict_key": ("""
import dataclasses, jax, jax.numpy as jnp
@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Config:
    weights: jax.Array
    mode: str = dataclasses.field(metadata={"static": True})
@jax.jit
def f(cfg, batch):
    return cfg.weights * 2 if cfg.mode == "a" else cfg.weights
f(Config(jnp.ones(3), "a"), {"x": jnp.ones(2)})
f(Config(jnp.ones(3), "b"), {"x": jnp.ones(2)})
f(Config(jnp.ones(3), "b"), {"x": jnp.ones(2), "aux": jnp.ones(2)})
""", 3, [[], ["cfg.mode: static field 'a' -> 'b'"], ["batch['aux']: added (float32[2])"]]),
    "aux_data_and_node_type": ("""
import jax, jax.numpy as jnp
class Box:
    def __init__(self, value, tag):
        self.value, self.tag = value, tag
jax.tree_util.register_pytree_node(Box, lambda b: ((b.value,), b.tag), lambda tag, kids: Box(kids[0], tag))
@jax.jit
def f(box):
    return box.value if isinstance(box, Box) else box[0]
f(Box(jnp.ones(3), "x"))
f(Box(jnp.ones(3), "y"))
f((jnp.ones(3),))
""", 3, [[], ["box: pytree auxiliary data 'x' -> 'y'"],
         ["box: pytree node Box -> tuple (Box(float32[3], aux data 'y') -> (float32[3],))"]]),
    "committed_argument": ("""
import jax, jax.numpy as jnp
@jax.jit
def f(x):
    return x * 2
f(jnp.ones(3))
f(jax.device_put(jnp.ones(3), jax.devices()[0]))
""", 1, [[], ["x: sharding uncommitted -> committed to cpu:0"]]),
    "explicit_sharding": ("""
import jax, jax.numpy as jnp
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P
mesh = jax.make_mesh((1,), ("i",), axis_types=(AxisType.Explicit,))
@jax.jit
def f(x):
    return x * 2
f(jnp.ones(4))
f(jax.device_put(jnp.ones(4), NamedSharding(mesh, P("i"))))
""", 2, [[], ["x: sharding unsharded -> P('i',) over i=1 (Explicit)"]]),
    "keras_jit_compile_false": ("""
import numpy as np, keras
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8), keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse", jit_compile=False)
model.fit(np.ones((64, 4)), np.ones((64, 1)), batch_size=16, verbose=0)
""", 0, []),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(KEY_PROGRAMS))
def test_traceguard_names_every_key_difference_jax_names(name, tmp_path):
    source, misses, changes = KEY_PROGRAMS[name]
    program = tmp_path / f"{name}.py"
    program.write_text(source)
    run = _run(program, tmp_path / "out")
    assert run.status == 0, run.output[-3000:]
    explained = [line for line in run.logged if parse_miss(line["message"]).function == "f"]
    assert len(explained) == misses, [line["message"] for line in run.logged]
    gaps, _ = parity_gaps(run.logged, run.records, str(ROOT))
    assert not gaps, "\n".join(str(gap) for gap in gaps)
    records = [record["event"] for record in function_traces(run.records)
               if record["event"]["function"] == "f"]
    assert [[change["text"] for change in event["changes"]] for event in records] == changes
