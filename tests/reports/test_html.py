"""The HTML report and notebook tables, read back with html.parser: marks, tooltips, tables, escaping."""

import html.parser
import importlib.util
import pathlib
import re

import pytest
import tensorflow as tf
from conftest import DEFAULT

import traceguard as tg
from traceguard._core.events import TraceEvent, TraceKind
from traceguard._record.log import eager_counter
from traceguard._reports.html import render_html
from traceguard._reports.html_tables import layers_html
from traceguard._reports.timeline import MARK_BUDGET

pytestmark = pytest.mark.backend("tensorflow")

ROOT = pathlib.Path(__file__).resolve().parents[2]
PARTIAL_BATCH_HINT = ("A partial last batch has a new shape and costs a trace: batch with "
                      "`drop_remainder=True`, or choose a dataset size divisible by the batch size.")
VOID_TAGS = {"meta", "br", "link", "img", "input", "hr"}


class Element:
    def __init__(self, tag, attrs, parent=None):
        self.tag, self.attrs, self.parent = tag, dict(attrs), parent
        self.nodes = []  # Child elements and text, in document order.

    @property
    def children(self):
        return [node for node in self.nodes if isinstance(node, Element)]

    @property
    def text(self):
        """The text directly inside this element."""
        return "".join(node for node in self.nodes if isinstance(node, str))

    def iter(self):
        yield self
        for child in self.children:
            yield from child.iter()

    def find_all(self, tag, cls=None):
        return [element for element in self.iter() if element.tag == tag
                and (cls is None or cls in element.attrs.get("class", "").split())]

    def all_text(self):
        """The text inside this element and its descendants, except style sheets."""
        return "".join(node if isinstance(node, str) else node.all_text() for node in self.nodes
                       if not (isinstance(node, Element) and node.tag == "style"))

    def title(self):
        return next(child.text for child in self.children if child.tag == "title")


class TreeBuilder(html.parser.HTMLParser):
    """A small DOM: enough to find rows, marks and their titles as a browser parses them."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = self.current = Element("#document", {})

    def handle_starttag(self, tag, attrs):
        element = Element(tag, attrs, self.current)
        self.current.nodes.append(element)
        if tag not in VOID_TAGS:
            self.current = element

    def handle_startendtag(self, tag, attrs):
        self.current.nodes.append(Element(tag, attrs, self.current))

    def handle_endtag(self, tag):
        element = self.current
        while element is not self.root and element.tag != tag:
            element = element.parent
        assert element is not self.root, f"</{tag}> closes nothing"
        self.current = element.parent

    def handle_data(self, data):
        self.current.nodes.append(data)


def parse(document):
    builder = TreeBuilder()
    builder.feed(document)
    builder.close()
    assert builder.current is builder.root, f"<{builder.current.tag}> left open"
    return builder.root


def event(index, kind, timestamp, layer="dense", function="one_step_on_data", changes=(), reason="why",
          hint=None, error=None, signature=None):
    return TraceEvent(index=index, kind=TraceKind(kind), layer=layer, function=function,
                      signature=signature or {"inputs": "float32[32,8]"}, changes=tuple(changes),
                      created_variables=(), reason=reason, hint=hint, timestamp=1.8e9 + timestamp,
                      duration_s=0.002, thread="MainThread", error=error)


def rows_of(document):
    return {row.attrs["data-layer"]: row for row in parse(document).find_all("g", "row")
            if "data-layer" in row.attrs}  # The layers' rows, not the functions'.


def marks_of(row):
    return row.find_all("g", "mark")


def kinds_of(mark):
    return [rect.attrs["class"] for rect in mark.find_all("rect")]


def test_runs_far_apart_get_one_mark_each_with_every_detail_in_the_title():
    events = [event(1, "symbolic", 0.0, function=None, reason="Keras ran `call` symbolically."),
              event(2, "trace", 1.0, reason="First trace."),
              event(3, "variable_retrace", 2.0, reason="Traced again."),
              event(4, "retrace", 10.0, changes=["inputs: dim 0 32 -> 6"], reason="The signature changed.",
                    hint=PARTIAL_BATCH_HINT, signature={"inputs": "float32[6,8]", "training": "True"})]
    row = rows_of(render_html({"dense": events}))["dense"]
    assert row.attrs["data-runs"] == "4"
    marks = marks_of(row)
    assert [kinds_of(mark) for mark in marks] == [["k-symbolic"], ["k-trace"], ["k-variable_retrace"],
                                                  ["k-retrace"]]
    assert [mark.attrs["data-runs"] for mark in marks] == ["1"] * 4
    xs = [float(mark.find_all("rect")[0].attrs["x"]) for mark in marks]
    assert xs == sorted(xs) and len(set(xs)) == 4
    assert marks[3].title() == (
        "#4 retrace in one_step_on_data\n"
        "at +10.000 s, ran 2.0 ms (inputs=float32[6,8], training=True)\n"
        "changed: inputs: dim 0 32 -> 6\n"
        "why: The signature changed.\n"
        f"fix: {PARTIAL_BATCH_HINT}")
    assert marks[0].title().splitlines()[0] == "#1 symbolic"
    # Retraces are taller than the other marks: a cue that does not depend on colour.
    heights = [float(mark.find_all("rect")[0].attrs["height"]) for mark in marks]
    assert heights[0] == heights[1] < heights[2] == heights[3]


def test_runs_in_one_cell_share_a_mark_stacked_most_costly_on_top():
    events = [event(1, "eager", 0.0, function=None, reason="Ran eagerly."),
              event(2, "retrace", 0.0, changes=["inputs: dim 0 32 -> 6"], reason="The signature changed.",
                    hint=PARTIAL_BATCH_HINT),
              event(3, "eager", 0.0, function=None, reason="Ran eagerly."),
              event(4, "trace", 60.0)]
    marks = marks_of(rows_of(render_html({"dense": events}))["dense"])
    assert [mark.attrs["data-runs"] for mark in marks] == ["3", "1"]
    assert kinds_of(marks[0]) == ["k-retrace", "k-eager"]
    assert marks[0].title() == (
        "3 body runs, #1\u2013#3, +0.000 s to +0.000 s: 2 eager, 1 retrace\n"
        "retrace in one_step_on_data: inputs: dim 0 32 -> 6\n"
        "eager\n"
        f"fix (retrace): {PARTIAL_BATCH_HINT}")


def test_consecutive_runs_with_one_explanation_merge_into_one_bar():
    events = [event(index, "eager", index * 0.01, function=None, reason="Ran eagerly.")
              for index in range(1, 1001)]
    (mark,) = marks_of(rows_of(render_html({"loop": events}))["loop"])
    assert mark.attrs["data-runs"] == "1000" and kinds_of(mark) == ["k-eager"]
    assert mark.title() == ("1,000 body runs, #1\u2013#1000, +0.000 s to +9.990 s: 1,000 eager\n"
                            "eager\nwhy: Ran eagerly.")


def test_a_retrace_between_eager_runs_splits_the_bar():
    events = [event(index, "eager", float(index), function=None, reason="Ran eagerly.")
              for index in range(1, 1001)]
    events[499] = event(500, "retrace", 500.0, changes=["x: dim 0 1 -> 2"], reason="Changed.")
    marks = marks_of(rows_of(render_html({"loop": events}))["loop"])
    assert [kinds_of(mark) for mark in marks] == [["k-eager"], ["k-retrace", "k-eager"], ["k-eager"]]
    assert sum(int(mark.attrs["data-runs"]) for mark in marks) == 1000


def load_benchmark():
    path = ROOT / "benchmarks" / "html_report.py"
    spec = importlib.util.spec_from_file_location("html_report_benchmark", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("scenario", [
    "training_events",
    pytest.param("worst_case_events", marks=pytest.mark.slow),  # 100 layers x 1,000 random runs: ~15 s.
])
def test_benchmark_scale_report_accounts_for_every_run_within_the_mark_budget(scenario):
    events_by_layer = getattr(load_benchmark(), scenario)()
    document = render_html(events_by_layer)
    rows = rows_of(document)
    assert list(rows) == list(events_by_layer) and len(rows) == 100
    marks = 0
    for layer, row in rows.items():
        runs = [int(mark.attrs["data-runs"]) for mark in marks_of(row)]
        assert sum(runs) == len(events_by_layer[layer]) == 1000
        marks += len(runs)
    assert marks <= MARK_BUDGET
    # 6.3 MB measured after the page gained its retrace-cause rows and per-kind row stats (#40).
    assert len(document.encode()) < 6_500_000


def test_hostile_text_renders_as_text_never_as_markup():
    name = '<script>alert("name")</script>'
    hostile = event(1, "retrace", 0.0, layer=name, function="</title><script>alert(1)</script>",
                    changes=["a: dim 0 <b> -> </svg>"], reason='<img src=x onerror="alert(2)">',
                    hint="`x` & \" onmouseover=\"alert(3)", error="</td></table><iframe src=//evil>",
                    signature={"x<y": "float32['\"]"})
    events_by_layer = {name: [hostile], "plain": [event(1, "trace", 5.0, layer="plain")]}
    document = render_html(events_by_layer, title="<h1>title</h1>")
    tree = parse(document)
    tags = {element.tag for element in tree.iter()}
    assert tags <= {"#document", "html", "head", "meta", "title", "style", "body", "h1", "h2", "p", "div",
                    "span", "svg", "g", "rect", "line", "text", "tspan", "table", "thead", "tbody", "tr",
                    "th", "td", "code", "b", "br", "small"}
    assert not [name for element in tree.iter() for name in element.attrs if name.startswith("on")]
    rows = rows_of(document)
    assert list(rows) == [name, "plain"]
    (mark,) = marks_of(rows[name])
    title = mark.title()
    assert "</title><script>alert(1)</script>" in title.splitlines()[0]
    assert "why: <img src=x onerror=\"alert(2)\">" in title and "a: dim 0 <b> -> </svg>" in title
    assert "error: </td></table><iframe src=//evil>" in title
    label = rows[name].find_all("text", "label")[0]
    assert label.all_text().endswith(name)
    assert tree.find_all("h1")[0].text == "<h1>title</h1>"
    tables_text = "".join(table.all_text() for table in tree.find_all("table"))
    assert name in tables_text and "<img src=x onerror=\"alert(2)\">" in tables_text


def test_report_loads_nothing_and_runs_no_script():
    document = render_html({"dense": [event(1, "trace", 0.0), event(2, "retrace", 1.0, hint="fix")]})
    tree = parse(document)
    assert not tree.find_all("script") and not tree.find_all("link") and not tree.find_all("img")
    assert not [element for element in tree.iter() if {"src", "href"} & set(element.attrs)]
    assert "://" not in document and "url(" not in document and "@import" not in document
    (policy,) = [meta.attrs["content"] for meta in tree.find_all("meta")
                 if meta.attrs.get("http-equiv") == "Content-Security-Policy"]
    assert policy.startswith("default-src 'none';")


def test_legend_has_one_colour_per_kind_with_its_count():
    document = render_html({"a": [event(1, "trace", 0.0), event(2, "retrace", 1.0)],
                            "b": [event(1, "retrace", 2.0)]})
    legend = [element for element in parse(document).find_all("div", "legend")][0]
    items = legend.find_all("span", "item")
    assert [item.all_text() for item in items] == [
        "eager (0)", "symbolic (0)", "trace (1)", "variable_retrace (0)", "retrace (2)", "save (0)"]
    colours = [item.find_all("span", "swatch")[0].attrs["style"] for item in items]
    assert len(set(colours)) == 6


def counts_rows(document):
    (table,) = parse(document).find_all("table", "tg-counts")
    return [[cell.all_text() for cell in row.children] for row in table.find_all("tr")]


def test_counts_table_lists_runs_per_kind_and_the_log_counters():
    log = tg.TraceLog(2, owner="dense")
    for index, kind in enumerate(["symbolic", "trace", "retrace"], start=1):
        log._append(event(index, kind, float(index)))
    eager_counter(log)()
    rows = counts_rows(render_html({"dense": log, "other": [event(1, "save", 0.0)]}))
    assert rows == [
        ["layer", "eager", "symbolic", "trace", "variable_retrace", "retrace", "save", "body runs",
         "eager calls", "dropped"],
        ["dense", "\u00b7", "\u00b7", "1", "\u00b7", "1", "\u00b7", "2", "1", "1"],
        ["other", "\u00b7", "\u00b7", "\u00b7", "\u00b7", "\u00b7", "1", "1", "0", "0"],
    ]


def test_retraces_table_groups_identical_retraces_with_their_fix():
    changed = dict(changes=["inputs: dim 0 32 -> 6"], reason="The signature changed.",
                   hint=PARTIAL_BATCH_HINT)
    events = [event(1, "trace", 0.0), event(2, "retrace", 1.0, **changed),
              event(3, "retrace", 2.0, **changed),
              event(4, "retrace", 3.0, changes=["training: value True -> False"], reason="Training changed.",
                    hint="Pass a Python bool."),
              event(5, "retrace", 4.0, **changed)]
    (table,) = parse(render_html({"dense": events})).find_all("table", "tg-retraces")
    rows = [[cell.all_text() for cell in row.children] for row in table.find_all("tr")[1:]]
    assert rows == [
        ["dense", "retrace", "one_step_on_data", "#2, #3, #5 (3 runs)", "inputs: dim 0 32 -> 6",
         f"The signature changed.Fix: {PARTIAL_BATCH_HINT.replace('`', '')}"],
        ["dense", "retrace", "one_step_on_data", "#4", "training: value True -> False",
         "Training changed.Fix: Pass a Python bool."],
    ]
    assert "<code>drop_remainder=True</code>" in render_html({"dense": events})


def test_report_without_retraces_says_so():
    tree = parse(render_html({"dense": [event(1, "trace", 0.0)]}))
    assert not tree.find_all("table", "tg-retraces")
    assert [p.text for p in tree.find_all("p", "ok")] == [
        "No layer retraced: every graph was traced once per signature."]


def axis_of(document):
    (svg,) = parse(document).find_all("svg", "timeline")
    ticks = [tick.text for tick in svg.find_all("text", "tick")]
    return svg.attrs["data-axis"], svg.find_all("text", "axis-name")[0].text, ticks


def test_time_axis_ticks_at_round_seconds_or_milliseconds():
    assert axis_of(render_html({"a": [event(1, "trace", 0.0), event(2, "retrace", 10.0)]})) == (
        "time", "time since the first run", ["0 s", "2 s", "4 s", "6 s", "8 s", "10 s"])
    assert axis_of(render_html({"a": [event(1, "trace", 0.0), event(2, "retrace", 0.0035)]}))[2] == [
        "0.0 ms", "0.5 ms", "1.0 ms", "1.5 ms", "2.0 ms", "2.5 ms", "3.0 ms", "3.5 ms"]


def test_order_axis_and_the_fallback_when_all_runs_share_a_timestamp():
    events_by_layer = {"a": [event(1, "trace", 0.0), event(2, "retrace", 50.0)],
                       "b": [event(1, "trace", 7.0)]}
    axis, name, ticks = axis_of(render_html(events_by_layer, axis="order"))
    assert (axis, name, ticks[0], ticks[-1]) == ("order", "body runs in order", "run 1", "run 3")
    rows = rows_of(render_html(events_by_layer, axis="order"))
    x = {layer: [float(mark.find_all("rect")[0].attrs["x"]) for mark in marks_of(row)]
         for layer, row in rows.items()}
    assert x["a"][0] < x["b"][0] < x["a"][1]  # b's run came second
    same_time = {"a": [event(1, "trace", 0.0), event(2, "retrace", 0.0)]}
    assert axis_of(render_html(same_time))[:2] == ("order", "body runs in order")
    assert len(marks_of(rows_of(render_html(same_time))["a"])) == 2


def test_empty_logs_render_a_valid_page():
    rows = rows_of(render_html({"unused": []}))
    assert rows["unused"].attrs["data-runs"] == "0" and not marks_of(rows["unused"])
    assert parse(render_html({})).find_all("svg", "timeline")


def test_write_html_checks_its_arguments(tmp_path):
    with pytest.raises(TypeError,
                       match=r"`events_by_layer` expects a mapping .*Received: events_by_layer=\[\]"):
        tg.write_html(tmp_path / "r.html", [])
    with pytest.raises(TypeError, match=r"layer names \(str\) as keys. Received: key=1"):
        tg.write_html(tmp_path / "r.html", {1: []})
    with pytest.raises(TypeError, match=r"`events_by_layer\['a'\]` expects `traceguard.TraceEvent` items. "
                                        r"Received: 'x'"):
        tg.write_html(tmp_path / "r.html", {"a": ["x"]})
    with pytest.raises(TypeError, match=r"`events_by_layer\['a'\]` expects a `TraceLog`, a `LayerRuns` or a "
                                        r"sequence of `traceguard.TraceEvent`. Received: str"):
        tg.write_html(tmp_path / "r.html", {"a": "trace"})
    with pytest.raises(ValueError, match=r"`axis` expects one of time, order. Received: axis='x'"):
        tg.write_html(tmp_path / "r.html", {}, axis="x")
    with pytest.raises(TypeError, match=r"`path` expects a file path .*Received: path=3"):
        tg.write_html(3, {})
    assert not list(tmp_path.iterdir())


# The seed layer's runs under `tf.function`: Keras 3 runs a symbolic build pass first, Keras 2 none.
SEED_MARKS = {True: [["k-symbolic"], ["k-trace"], ["k-variable_retrace"]],
              False: [["k-trace"], ["k-variable_retrace"]]}


def test_trace_log_to_html_writes_a_mark_per_run_of_the_seed_layer(tmp_path, seed_input, keras_flavor):
    layer = keras_flavor.SeedLayer(name="seed")
    step = tf.function(layer)
    step(seed_input)
    step(seed_input)
    path = layer.trace_log.to_html(tmp_path / "seed.html")
    assert path == tmp_path / "seed.html"
    document = path.read_text(encoding="utf-8")
    row = rows_of(document)["seed"]
    assert [kinds_of(mark) for mark in marks_of(row)] == SEED_MARKS[keras_flavor.is_keras_3]
    trace = keras_flavor.pick(2, 1)  # The number of the trace.
    assert marks_of(row)[trace - 1].title().startswith(f"#{trace} trace in function\nat +")
    assert parse(document).find_all("title")[0].text == "traceguard: layer seed"


def test_write_html_takes_several_layers_logs(tmp_path, seed_input, keras_flavor):
    first, second = keras_flavor.SeedLayer(name="first"), keras_flavor.SeedLayer(name="second")
    tf.function(first)(seed_input)
    second(seed_input)
    logs = {layer.name: layer.trace_log for layer in (first, second)}
    path = tg.write_html(str(tmp_path / "two.html"), logs)
    rows = rows_of(path.read_text(encoding="utf-8"))
    # On Keras 3, the eager call runs the symbolic build pass first; Keras 2 has none.
    assert {layer: row.attrs["data-runs"] for layer, row in rows.items()} == {
        "first": keras_flavor.pick("3", "2"), "second": keras_flavor.pick("1", "0")}
    # second: its body runs, then 1 eager call.
    assert counts_rows(path.read_text(encoding="utf-8"))[2][-2:] == [keras_flavor.pick("1", "0"), "1"]


def test_an_explanations_layers_go_straight_into_the_report_and_the_notebook_table(tmp_path, seed_input):
    keras_flavor = DEFAULT  # explain() watches the layers of tf.keras's Keras.
    explanation = tg.explain(tf.function(keras_flavor.SeedLayer(name="seed")), seed_input)
    path = tg.write_html(tmp_path / "explain.html", explanation.layers, title=explanation.title)
    document = path.read_text(encoding="utf-8")
    seed, dense = explanation.layers  # Keras numbers the Dense layers a session creates: dense, dense_1, ...
    assert seed == "seed" and dense.startswith("dense")
    rows = rows_of(document)
    assert {layer: [kinds_of(mark) for mark in marks_of(row)] for layer, row in rows.items()} == {
        layer: SEED_MARKS[keras_flavor.is_keras_3] for layer in (seed, dense)}
    assert counts_rows(document)[0][-1] == "body runs"  # No eager calls or drops: no such columns.
    tree = parse(layers_html(explanation.layers, heading=explanation.title))
    # Without the functions given, the heading counts the layers' runs, named so.
    runs = keras_flavor.pick("6 layer runs (2 symbolic, 2 trace, 2 variable_retrace)",
                             "4 layer runs (2 trace, 2 variable_retrace)")
    assert tree.find_all("div")[1].all_text() == f"explain(tf.function function): 2 layers: {runs}"
    assert [row.children[0].text for row in tree.find_all("table", "tg-retraces")[0].find_all("tr")] == [
        "layers", f"{seed}, {dense}"]  # One cause, both layers: said once.


def _without_write_time(document):
    return re.sub(r"written \d{4}-\d\d-\d\d [\d:]+ \w*", "written <time>", document)


def test_write_html_writes_the_to_html_of_an_explanation_of_the_same_events(tmp_path, seed_input):
    explanation = tg.explain(tf.function(DEFAULT.SeedLayer(name="seed")), seed_input)
    own = explanation.to_html(tmp_path / "own.html", axis="order")
    delegated = tg.write_html(tmp_path / "delegated.html", explanation.layers, title=explanation.title,
                              axis="order", functions=explanation.functions.values())
    document = _without_write_time(own.read_text(encoding="utf-8"))
    assert "written <time>" in document and "<h2>Functions</h2>" in document
    assert _without_write_time(delegated.read_text(encoding="utf-8")) == document


def test_each_report_objects_to_html_takes_the_axis_and_checks_it(tmp_path, seed_input, keras_flavor):
    layer = keras_flavor.SeedLayer(name="seed")
    tf.function(layer)(seed_input)
    by_order = layer.trace_log.to_html(tmp_path / "order.html", axis="order").read_text(encoding="utf-8")
    by_time = layer.trace_log.to_html(tmp_path / "time.html").read_text(encoding="utf-8")
    assert _without_write_time(by_order) == _without_write_time(
        tg.write_html(tmp_path / "logs.html", {"seed": layer.trace_log}, title="traceguard: layer seed",
                      axis="order").read_text(encoding="utf-8"))
    assert _without_write_time(by_order) != _without_write_time(by_time)
    for report in (layer.trace_log, tg.explain(lambda: None)):
        with pytest.raises(ValueError, match=r"^`axis` expects one of time, order. Received: axis='x'$"):
            report.to_html(tmp_path / "bad.html", axis="x")
    assert not (tmp_path / "bad.html").exists()


def test_repr_html_shows_counts_as_pills_and_one_row_per_event(seed_input, keras_flavor):
    layer = keras_flavor.SeedLayer(name="seed")
    tf.function(layer)(seed_input)
    tree = parse(layer.trace_log._repr_html_())
    heading = tree.find_all("div")[1]
    symbolic = keras_flavor.pick(["symbolic"], [])  # Keras 2 has no symbolic build pass.
    assert heading.all_text() == "TraceLog of layer seed: " + keras_flavor.pick("1 symbolic ", "") + (
        "1 trace 1 variable_retrace")
    pills = heading.find_all("span", "tg-kind")
    assert [pill.attrs["style"] for pill in pills] == ["background:#CC79A7;color:#000"] * len(symbolic) + [
        "background:#0072B2;color:#fff", "background:#E69F00;color:#000"]
    (table,) = tree.find_all("table", "tg-events")
    rows = [[cell.all_text() for cell in row.children] for row in table.find_all("tr")[1:]]
    kinds = symbolic + ["trace", "variable_retrace"]
    assert [row[:4] for row in rows] == [[str(number), kind, "function", "inputs=float32[60,28,28]"]
                                         for number, kind in enumerate(kinds, 1)]
    assert rows[-1][5].startswith("The tf.function function traced the same signature again")
    assert "Fix: Create the variables before the first traced call" in rows[-1][5]


def test_repr_html_of_a_long_log_shows_both_ends_and_how_many_are_hidden():
    log = tg.TraceLog(1000, owner="long")
    for index in range(1, 101):
        log._append(event(index, "eager", float(index), function=None))
    eager_counter(log)()
    tree = parse(log._repr_html_())
    rows = tree.find_all("table", "tg-events")[0].find_all("tr")[1:]
    assert len(rows) == 61
    indices = [row.children[0].text for row in rows]
    assert indices[:30] == [str(index) for index in range(1, 31)]
    assert indices[31:] == [str(index) for index in range(71, 101)]
    assert rows[30].all_text() == "\u2026 40 more runs; all of them: trace_log.summary()"
    assert "(1 eager call)" in tree.all_text()


def test_repr_html_escapes_the_owner_and_messages():
    log = tg.TraceLog(10, owner="<script>alert(1)</script>")
    log._append(event(1, "retrace", 0.0, changes=["<i>x</i>"], reason="<img src=x>", hint="`<b>`",
                      signature={"<u>": "float32[1]"}))
    tree = parse(log._repr_html_())
    assert {element.tag for element in tree.iter()} <= {
        "#document", "div", "style", "b", "code", "span", "table", "thead", "tbody", "tr", "th", "td"}
    text = tree.all_text()
    for hostile in ("<script>alert(1)</script>", "<i>x</i>", "<img src=x>", "<b>", "<u>=float32[1]"):
        assert hostile in text


def test_layers_html_shows_counts_per_layer_and_the_retraces():
    events_by_layer = {"<a>": [event(1, "trace", 0.0), event(2, "retrace", 1.0, changes=["x: dim 0 1 -> 2"])],
                       "b": [event(1, "symbolic", 0.0, function=None)]}
    tree = parse(layers_html(events_by_layer, heading="Explanation of <step>"))
    assert tree.find_all("div")[1].all_text() == ("Explanation of <step>: 2 layers: 3 layer runs "
                                                  "(1 symbolic, 1 trace, 1 retrace)")
    assert [row.children[0].text for row in tree.find_all("table", "tg-counts")[0].find_all("tr")] == [
        "layer", "<a>", "b"]
    (retrace,) = tree.find_all("table", "tg-retraces")[0].find_all("tr")[1:]
    assert [cell.all_text() for cell in retrace.children][:5] == [
        "<a>", "retrace", "one_step_on_data", "#2", "x: dim 0 1 -> 2"]


def test_repr_html_of_an_empty_log():
    tree = parse(tg.TraceLog(10, owner="idle")._repr_html_())
    assert tree.all_text().endswith("TraceLog of layer idle: no runs recorded")
    assert not tree.find_all("table")
