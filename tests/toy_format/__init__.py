"""A toy index format, registered the way a new RocketMQ index format would be: this
folder (its layout and reader, its store, its engines) plus one ``register_format`` line.
The suite registers it to show that nothing else in the tree changes for a new format."""

from __future__ import annotations

from rmqarrow import FormatPlugin

__all__ = ["PLUGIN"]

#: the one registry line's argument: what reads the toy format, by import path
PLUGIN = FormatPlugin(
    "toy",
    "a toy index: one text line per entry",
    native={"toy_file": "toy_format.store:ToyStore"},
    engines={
        "native": "toy_format.engine:answer_queries",
        "duckdb": "toy_format.engine:answer_queries_duckdb",
    },
    detector="toy_format.layout:detect",
)
