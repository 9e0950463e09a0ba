"""The harness that runs Keras's own layer tests with traceguard (tests/keras_suite/).

The harness itself runs in CI (`python tests/keras_suite/run.py --selection ci`);
these tests pin its judgement and its mixing, which a green run cannot show.
"""

import importlib.util
import pathlib

import pytest

from traceguard import _compat

pytestmark = pytest.mark.backend("tensorflow")

if not _compat.IS_KERAS_3:
    pytest.skip("the harness runs the tests of the Keras 3 wheel", allow_module_level=True)

import keras  # noqa: E402

import traceguard as tg  # noqa: E402

SUITE = pathlib.Path(__file__).resolve().parent.parent / "keras_suite"


def _load(name):
    spec = importlib.util.spec_from_file_location(f"keras_suite_{name}", SUITE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


run = _load("run")
plugin = _load("keras_suite_plugin")

PLAIN = {"a_test.py::T::test_one": {"outcome": "passed", "message": ""},
         "a_test.py::T::test_two": {"outcome": "failed", "message": "AssertionError: plain too"}}


def test_equal_outcomes_pass_even_when_the_plain_run_fails(capsys):
    assert run._compare("mixin", PLAIN, dict(PLAIN)) is False
    assert "mixin vs plain: 2 tests, 0 differences, 0 known" in capsys.readouterr().out


def test_a_different_outcome_fails_with_the_test_and_its_message(capsys):
    mixed = {**PLAIN, "a_test.py::T::test_one": {"outcome": "failed", "message": "KeyError: 'x'\nmore"}}
    assert run._compare("mixin", PLAIN, mixed) is True
    assert "  a_test.py::T::test_one: plain passed, mixin failed: KeyError: 'x'" in capsys.readouterr().out


def test_a_listed_difference_passes_with_its_reason_and_a_stale_one_fails(monkeypatch, capsys):
    mixed = {**PLAIN, "a_test.py::T::test_one": {"outcome": "failed", "message": "KeyError: 'x'"}}
    monkeypatch.setattr(run, "KNOWN_DIFFERENCES", {("mixin", "a_test.py::T::test_one"): "the reason"})
    assert run._compare("mixin", PLAIN, mixed) is False
    assert "plain passed, mixin failed (known: the reason)" in capsys.readouterr().out
    assert run._compare("mixin", PLAIN, dict(PLAIN)) is True
    assert "listed in KNOWN_DIFFERENCES but the outcome equals plain's" in capsys.readouterr().out


def test_a_module_that_fails_to_import_fails_the_ci_selection_only(capsys):
    plain = {**PLAIN, "b_test.py": {"outcome": "collection error", "message": "E   No module named 'grain'"}}
    assert run._report_plain(plain, strict=True) is True
    assert run._report_plain(plain, strict=False) is False
    assert "  b_test.py: E   No module named 'grain'" in capsys.readouterr().out


def test_modes_must_start_with_plain():
    with pytest.raises(SystemExit):
        run._parse(["--modes", "mixin"])
    assert run._parse(["--modes", "plain,watch", "--", "-k", "Dense"]).pytest_args == ["-k", "Dense"]


def test_each_layer_class_is_mixed_once_and_registered_under_its_own_name():
    def scale_class():
        class Scale(keras.layers.Layer):
            def __init__(self, factor, **kwargs):
                super().__init__(**kwargs)
                self.factor = factor

            def call(self, inputs):
                return inputs * self.factor

        return Scale

    first, second = scale_class(), scale_class()
    mixed = plugin.mixed_class(first)
    assert plugin.mixed_class(first) is mixed and issubclass(mixed, tg.TraceAwareMixin)
    assert mixed.__name__ == "Scale" and mixed.__bases__ == (tg.TraceAwareMixin, first)
    names = {keras.saving.get_registered_name(plugin.mixed_class(cls)) for cls in (first, second)}
    assert len(names) == 2 and all(name.startswith("traceguard_suite>Scale") for name in names)
    # As `run_layer_test` checks: built positionally, the copy revives as the same class.
    revived = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(mixed(2.0)))
    assert type(revived) is mixed and revived.factor == 2.0
    assert plugin.mixed_class(mixed) is mixed and plugin.mixed_class(int) is int
