"""Arrow types as numpy dtypes without pandas (pyarrow before 26 imports it for
``to_pandas_dtype``; pandas is no dependency, so `make test-lowest` runs without it)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from rmqarrow.converters.schema import ENTRIES_SCHEMA, TIERED_ITEMS_SCHEMA, numpy_dtype

FIXED_WIDTH = [
    f for s in (ENTRIES_SCHEMA, TIERED_ITEMS_SCHEMA) for f in s if pa.types.is_integer(f.type)
]


@pytest.mark.parametrize("field", FIXED_WIDTH, ids=lambda f: f.name)
def test_numpy_dtype_of_each_integer_column(field: pa.Field) -> None:
    dtype = numpy_dtype(field.type)
    assert dtype == np.dtype(
        f"{'u' if 'uint' in str(field.type) else 'i'}{field.type.bit_width // 8}"
    )
    assert pa.array(np.zeros(3, dtype), field.type).type == field.type
