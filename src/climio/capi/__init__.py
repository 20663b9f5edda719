"""climio's model I/O for compiled models: the C API (``climio.h``, ``libclimio``) and the Fortran module
(``climio_io``) over the same :class:`~climio.model.output.ModelOutput` and
:class:`~climio.model.input.ModelInput` the Python API uses.

``libclimio`` is built with cffi's embedding mode (:mod:`climio.capi.build`): its first call starts a Python
interpreter inside the model's process, which imports :mod:`climio.capi.bridge`; every C entry point then
dispatches to :mod:`climio.capi.calls`. docs/model-api.md is the reference and the PIO2 porting guide.
"""
