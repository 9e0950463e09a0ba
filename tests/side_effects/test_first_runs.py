"""The memory of "once": bounded, and one per layer."""

import copy

import pytest
import tensorflow as tf
from conftest import keras

import traceguard as tg
from traceguard._side_effects import first_runs as _first_runs

pytestmark = pytest.mark.backend("tensorflow")


def test_memory_claims_once_and_forgets_the_oldest_past_its_bound(monkeypatch):
    monkeypatch.setattr(_first_runs, "REMEMBERED_KEYS", 2)
    memory = _first_runs.Memory()
    assert [memory.claim(key) for key in ("a", "a", "b", "c")] == [True, False, True, True]
    assert list(memory.entries) == ["b", "c"]
    assert memory.claim("a") is True  # Forgotten, so claimed again.


class Once(tg.TraceAwareLayer):
    @tg.side_effects(print="once")
    def call(self, inputs):
        print(self.name)
        return inputs


def test_each_layer_and_each_copy_remembers_on_its_own(capfd):
    first = Once(name="first")
    tf.function(first)(tf.ones((2,)))
    tf.function(first)(tf.ones((2,)))  # A new tf.function, the same layer and signature.
    tf.function(Once(name="second"))(tf.ones((2,)))
    with keras.saving.custom_object_scope({"Once": Once}):  # Keras copies layers through their config.
        copied = copy.deepcopy(first)
    tf.function(copied)(tf.ones((2,)))
    assert capfd.readouterr().out.splitlines() == ["first", "second", "first"]
