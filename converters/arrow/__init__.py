"""Native index files and CommitLogs as Arrow: streaming scans, tables, messages.

:mod:`.scan` streams record batches straight over the memory maps, :mod:`.tables` is the
straightforward reference decoder, :mod:`.messages` the CommitLog's messages table.
"""
