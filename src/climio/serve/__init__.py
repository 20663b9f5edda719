"""I/O servers: model ranks send their output to ``climio serve`` ranks, which write it while the model computes.

:mod:`protocol` is the wire format (docs/serve-protocol.md), :mod:`connect` how the two sides find each other,
:mod:`server` the servers, :mod:`client` a Python model's side.
"""
