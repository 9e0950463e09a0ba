"""copy_with_print: the copy sees everything the original sees, except `print`."""

import builtins

import pytest
import tensorflow as tf

from traceguard._side_effects.routed_globals import check_routable, copy_with_print

pytestmark = pytest.mark.backend("tensorflow")

LIMIT = 1


def reads_globals(x):
    return x + LIMIT, len([x]), later_helper()


def later_helper():  # Defined after `reads_globals`: found through the module, live.
    return "helper"


def test_copy_reads_module_globals_live_and_builtins():
    global LIMIT
    copy = copy_with_print(reads_globals, lambda *args: None)
    assert copy(1) == (2, 1, "helper")
    LIMIT = 10
    try:
        assert copy(1) == (11, 1, "helper")
    finally:
        LIMIT = 1


def test_missing_global_raises_the_usual_name_error():
    def uses_undefined():
        return undefined_name  # noqa: F821

    with pytest.raises(NameError, match="name 'undefined_name' is not defined"):
        copy_with_print(uses_undefined, print)()


def test_print_is_replaced_in_the_body_and_in_functions_defined_inside_it():
    def body():
        print("direct")
        [print(f"comprehension {i}") for i in range(1)]
        inner = lambda: print("lambda")  # noqa: E731
        inner()
        builtins.print("explicit builtin")

    calls = []
    copy_with_print(body, lambda *args: calls.append(args))()
    assert calls == [("direct",), ("comprehension 0",), ("lambda",)]


def test_a_local_or_closure_named_print_is_untouched():
    calls = []

    def body(print=calls.append):
        print("local")

    copy_with_print(body, lambda *args: calls.append(("routed",) + args))()
    assert calls == ["local"]


def test_copy_keeps_defaults_closure_names_and_zero_argument_super():
    class Base:
        def greet(self, name, *, punctuation="!"):
            return f"hello {name}{punctuation}"

    class Child(Base):
        def greet(self, name="you", *, punctuation="?"):
            return super().greet(name, punctuation=punctuation)

    copy = copy_with_print(Child.greet, print)
    assert copy(Child()) == "hello you?"
    assert (copy.__name__, copy.__qualname__) == ("greet", Child.greet.__qualname__)
    assert copy.__kwdefaults__ == {"punctuation": "?"}


def test_namespace_views_show_the_module_names_as_autograph_reads_them():
    marker = object()
    copy = copy_with_print(reads_globals, marker)
    namespace = dict(copy.__globals__)  # What AutoGraph's getnamespace() does.
    assert namespace["print"] is marker
    assert namespace["later_helper"] is later_helper and namespace["tf"] is tf
    assert "LIMIT" in copy.__globals__ and copy.__globals__.get("LIMIT") == LIMIT
    assert dict(copy.__globals__.items())["reads_globals"] is reads_globals


def generator_body():
    yield 1


def assigns_a_global():
    global LIMIT
    LIMIT = 2


@pytest.mark.parametrize(
    "function, error, message",
    [
        (tf.function(reads_globals), TypeError,
         "`side_effects` expects a Python function (a `def`, such as a layer's `call`); apply it "
         "directly to the `def`, below `@tf.function`"),
        (generator_body, TypeError, "cannot route `print` in a generator or coroutine function"),
        (assigns_a_global, ValueError,
         "`side_effects` cannot route `print` in `assigns_a_global`: it assigns the module global "
         "'LIMIT' (a `global` statement)"),
    ],
)
def test_functions_that_cannot_be_routed_are_rejected(function, error, message):
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        check_routable(function, "side_effects")
