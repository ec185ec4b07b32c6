"""Properties decoding: the vectorized column equals RocketMQ's rule on any text."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqarrow.commitlog import decode_properties, encode_properties
from rmqarrow.commitlog.columns import property_column

_pieces = st.sampled_from(["KEYS", "UNIQ_KEY", "TAGS", "\x01", "\x02", "a", " ", "é", "K", "S"])
_texts = st.lists(_pieces, max_size=16).map("".join)


@settings(max_examples=300, deadline=None)
@given(st.lists(_texts, min_size=1, max_size=20))
def test_property_column_equals_decode(texts: list[str]) -> None:
    column = pa.array(texts, pa.string())
    for name in ("KEYS", "UNIQ_KEY", "TAGS", "weird name"):
        got = property_column(column, name).to_pylist()
        assert got == [decode_properties(t).get(name) for t in texts]


def test_rocketmq_rule_examples() -> None:
    assert decode_properties("KEYS\x01a\x02KEYS\x01b\x02") == {"KEYS": "b"}
    assert decode_properties("KEYS\x01b\x02KEYS\x01\x02") == {"KEYS": "b"}
    assert decode_properties("\x01x\x02K\x01\x01\x02") == {"K": "\x01"}
    assert decode_properties("KEYS\x01tail") == {"KEYS": "tail"}
    assert encode_properties({"a": "1", "b": "2"}) == "a\x011\x02b\x012\x02"


@given(
    st.dictionaries(
        st.text(
            st.characters(blacklist_characters="\x01\x02", blacklist_categories=("Cs",)), min_size=1
        ),
        st.text(
            st.characters(blacklist_characters="\x02", blacklist_categories=("Cs",)), min_size=1
        ),
    )
)
def test_encode_decode_round_trip(props: dict[str, str]) -> None:
    assert decode_properties(encode_properties(props)) == props
