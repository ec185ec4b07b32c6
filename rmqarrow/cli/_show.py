"""The commands' one door to their renderers (:mod:`rmqarrow.cli._render`,
:mod:`rmqarrow.cli._render_query`): each renderer is keyed by a result type of the
library, so they load with the first result a command has, not with the parser, and
``rmqarrow --help`` or a mistyped option loads no engine (numpy at most)."""

from __future__ import annotations

import argparse

__all__ = ["render", "render_export", "render_import", "render_lookup"]


def render(result: object, args: argparse.Namespace) -> int:
    """``info``, ``check``, ``verify`` and ``stats``: ``result`` as its command shows it."""
    from rmqarrow.cli._render import render as by_type

    return by_type(result, args)


def render_lookup(result: object, args: argparse.Namespace) -> int:
    """``query``: one :meth:`~rmqarrow.store.Store.lookup` result."""
    from rmqarrow.cli._render_query import render_lookup as by_type

    return by_type(result, args)


def render_export(manifest: object, args: argparse.Namespace, seconds: float) -> int:
    """``export``: the summary of the manifest, ``seconds`` after it started."""
    from rmqarrow.cli._render_query import render_export as by_type

    return by_type(manifest, args, seconds)


def render_import(paths: object, args: argparse.Namespace, seconds: float) -> int:
    """``import``: the summary of the files written, ``seconds`` after it started."""
    from rmqarrow.cli._render_query import render_import as by_type

    return by_type(paths, args, seconds)
