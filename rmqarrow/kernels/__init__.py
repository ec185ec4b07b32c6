"""The compute kernels over mapped index files: the vectorized key hash (numba or numpy),
the bulk put, the one scalar chain walk and the many-key lookup.

Kernels work on any open file (:class:`rmqarrow.format.layout.OpenIndex`), never on the
index classes themselves, so they sit below :mod:`rmqarrow.index`.
"""
