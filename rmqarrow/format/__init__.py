"""The native formats, written down once: byte layout, RocketMQ's rules, Java arithmetic,
the scalar key hash, file names, the checkpoint file, message records and query TSVs.

Depends on numpy and the standard library only.
"""
