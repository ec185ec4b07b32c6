"""Parquet datasets of an index: export, import, the part listing, manifest, atomic writes.

:mod:`.export` writes a dataset (a part per table for each native file or each run of
small files, a lone large file's entries in one part per export thread), :mod:`.importer`
writes the byte-identical native files back, :mod:`.parts` lists a table's data files
(the only place that does), :mod:`.manifest` records what was exported and from where,
:mod:`.atomic` makes every write all-or-nothing.
"""
