"""The JAX internals behind #38's keys, checked on the installed JAX: the traces of the
transformations that keep no cache (`jax.transforms`) and the pytree and call-structure
readings of `jax.keys`."""

import jax
import jax.numpy as jnp
import pytest

from traceguard._compat.jax import transforms as _jax_transforms

pytestmark = pytest.mark.backend("jax")


def test_uncached_transformations_are_named_and_staged_traces_are_not():
    seen = []

    def probe(x):
        seen.append(_jax_transforms.uncached_transformation())
        return x.sum()

    probe(jnp.ones(2))
    jax.grad(probe)(jnp.ones(2))
    jax.value_and_grad(probe)(jnp.ones(2))
    jax.jvp(probe, (jnp.ones(2),), (jnp.ones(2),))
    jax.vmap(probe)(jnp.ones((2, 3)))
    jax.vmap(jax.grad(probe))(jnp.ones((2, 3)))
    jax.jit(probe)(jnp.ones(4))
    jax.jit(jax.grad(probe))(jnp.ones(5))
    jax.eval_shape(probe, jnp.ones(6))
    jax.lax.scan(lambda carry, x: (carry, probe(x)), 0.0, jnp.ones((2, 7)))
    assert seen == [None, ("grad",), ("grad",), ("jvp",), ("vmap",), ("vmap", "grad"),
                    None, None, None, None]


def test_uncached_setting_is_none_outside_a_keras_step():
    assert _jax_transforms.uncached_setting() is None


def test_node_data_and_key_paths_give_a_node_s_fields_and_static_data():
    import dataclasses

    from traceguard._compat.jax import keys as _jax_keys

    @jax.tree_util.register_dataclass
    @dataclasses.dataclass
    class Config:
        weights: jax.Array
        mode: str = dataclasses.field(metadata={"static": True})

    config = Config(jnp.ones(2), "a")
    structure = jax.tree_util.tree_structure(config, is_leaf=lambda node: node is not config)
    assert structure.node_data() == (Config, ("a",))
    (path, _), = jax.tree_util.tree_flatten_with_path(config, is_leaf=lambda node: node is not config)[0]
    assert path == (jax.tree_util.GetAttrKey("weights"),)
    assert str(_jax_keys.array_spec(config)) == "Config(weights=float32[2], mode='a' (static))"
    assert _jax_keys.keywords_of({"y": 1, "x": 2}) == ("x", "y")


def test_committed_and_sharding_tell_where_an_array_is_placed():
    from traceguard._compat.jax import keys as _jax_keys

    device = jax.devices()[0]
    placed = jax.device_put(jnp.ones(2), device)
    assert (jnp.ones(2).committed, placed.committed) == (False, True)
    assert placed.sharding.device_set == {device}
    assert _jax_keys.placements({"x": jnp.ones(2), "y": placed, "n": 3, "s": "text"}) == {
        "x": "uncommitted", "y": f"committed to {device.platform}:{device.id}", "n": "uncommitted"}
