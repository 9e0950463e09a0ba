"""The data of a Keras method, as `forecast()` reads it: its structure of specs and its batching.

A `tf.data.Dataset` gives its `element_spec`; arrays (or lists and dicts of them), their
dtypes, shapes and length, and the batch size. Nothing is iterated or copied.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from traceguard._core.forecasts import Outside, Unforeseeable
from traceguard._core.specs import MappingSpec, SequenceSpec, Spec, TensorSpec

_DEFAULT_BATCH_SIZE = 32  # Keras's, for arrays with neither `batch_size` nor `steps`.


@dataclasses.dataclass(frozen=True)
class _Leaf:
    dtype: str
    dims: tuple[int | None, ...]


@dataclasses.dataclass(frozen=True)
class Data:
    """One data argument of a Keras method: its structure of leaves, and how it is batched."""

    structure: Any  # Nested tuples, lists and dicts of `_Leaf`s, batch dimension first.
    samples: int | None = None  # Arrays only.
    batch_size: int | None = None  # Arrays only.

    def spec(self, batch: int | None | str = "dataset") -> Spec:
        """The spec of one batch; `batch` sets the batch dimension, else the dataset's is used."""
        if batch != "dataset":
            return _spec(self.structure, None if isinstance(batch, str) else batch)
        if self.samples is None or not self.batch_size:
            return _spec(self.structure, keep=True)
        # Keras's array adapters (keras/src/trainers/data_adapters/array_data_adapter.py,
        # tf_keras/src/engine/data_adapter.py) batch the full batches, then concatenate the
        # partial one: the dataset's batch dimension is static only without a remainder.
        return _spec(self.structure, self.batch_size if self.samples % self.batch_size == 0 else None)

    def batch_sizes(self, steps: int | None) -> list[int]:
        """The sizes of the batches iterated, for arrays."""
        assert self.samples is not None and self.batch_size is not None
        sizes = [self.batch_size] * (self.samples // self.batch_size)
        if self.samples % self.batch_size:
            sizes.append(self.samples % self.batch_size)
        return sizes if steps is None else sizes[:steps]


def _spec(structure: Any, batch: int | None = None, keep: bool = False) -> Spec:
    # The spec `_compat.spec_of` gives the tensors Keras passes (lists become tuples).
    if isinstance(structure, _Leaf):
        dims = structure.dims if keep or not structure.dims else (batch, *structure.dims[1:])
        return TensorSpec(structure.dtype, dims)
    if isinstance(structure, dict):
        items = tuple((repr(key), _spec(value, batch, keep))
                      for key, value in sorted(structure.items(), key=lambda item: repr(item[0])))
        return MappingSpec(items, len(items))
    children = tuple(_spec(item, batch, keep) for item in structure)
    return SequenceSpec("tuple", children, len(children))


def is_dataset(value: Any) -> bool:
    return hasattr(value, "element_spec") and hasattr(value, "batch")  # tf.data's public API.


def _leaves_of_arrays(value: Any, floatx: str) -> Any:
    if isinstance(value, (list, tuple)):
        return tuple(_leaves_of_arrays(item, floatx) for item in value)
    if isinstance(value, Mapping):
        return {key: _leaves_of_arrays(item, floatx) for key, item in value.items()}
    if not (hasattr(value, "shape") and hasattr(value, "dtype")) or not len(value.shape):
        raise TypeError(type(value).__name__)
    dtype = str(getattr(value.dtype, "name", value.dtype))
    # Both Kerases cast floating-point arrays to `floatx()` (array_slicing.convert_to_sliceable,
    # tf_keras data_adapter._process_tensorlike).
    return _Leaf(floatx if dtype.startswith(("float", "bfloat")) else dtype,
                 tuple(None if d is None else int(d) for d in value.shape))


def _leaves_of_spec(element_spec: Any) -> Any:
    if isinstance(element_spec, (list, tuple)):
        return tuple(_leaves_of_spec(item) for item in element_spec)
    if isinstance(element_spec, Mapping):
        return {key: _leaves_of_spec(item) for key, item in element_spec.items()}
    if type(element_spec).__name__ != "TensorSpec":
        raise TypeError(type(element_spec).__name__)
    return _Leaf(element_spec.dtype.name, tuple(element_spec.shape.as_list()))


def _pack(x: Any, y: Any, sample_weight: Any) -> Any:
    # Keras's `pack_x_y_sample_weight` (keras/src/trainers/data_adapters/data_adapter_utils.py).
    if y is None:
        return (x,) if isinstance(x, (list, tuple)) else x
    return (x, y) if sample_weight is None else (x, y, sample_weight)


def describe_data(x: Any, y: Any, sample_weight: Any, batch_size: int | None, steps: int | None,
              floatx: str) -> Data | Outside:
    if is_dataset(x):
        try:
            return Data(_leaves_of_spec(x.element_spec))
        except TypeError as error:
            return Outside(Unforeseeable.DATA, f"a dataset of {error}")
    try:
        structure = _leaves_of_arrays(_pack(x, y, sample_weight), floatx)
    except TypeError as error:
        return Outside(Unforeseeable.DATA, f"data of type {error}")
    samples = _first_dim(structure)
    if samples is None:
        return Outside(Unforeseeable.DATA, "arrays of unknown length")
    if not batch_size:
        batch_size = math.ceil(samples / steps) if steps else _DEFAULT_BATCH_SIZE
    return Data(structure, samples, batch_size)


def _first_dim(structure: Any) -> int | None:
    if isinstance(structure, _Leaf):
        return structure.dims[0]
    items = structure.values() if isinstance(structure, dict) else structure
    return next((_first_dim(item) for item in items), None)


def split_data(data: Data, validation_split: float) -> tuple[Data, Data]:
    # Both Kerases: `split_at = floor(samples * (1 - validation_split))`
    # (keras array_slicing.train_validation_split, tf_keras data_adapter.train_validation_split).
    assert data.samples is not None
    split_at = int(math.floor(data.samples * (1.0 - validation_split)))
    return (dataclasses.replace(data, samples=split_at),
            dataclasses.replace(data, samples=data.samples - split_at))


def unpack_validation(validation_data: Any) -> tuple[Any, Any, Any]:
    if is_dataset(validation_data):
        return validation_data, None, None
    if isinstance(validation_data, (list, tuple)) and len(validation_data) in (2, 3):
        return (*validation_data, None)[:3]
    raise ValueError("`forecast()` expects `validation_data` to be `(x_val, y_val)`, "
                     f"`(x_val, y_val, sample_weight)` or a dataset. Received: {validation_data!r}")
