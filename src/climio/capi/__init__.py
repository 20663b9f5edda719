"""climio's model I/O for compiled models: the C API (``climio.h``, ``libclimio``) and the Fortran module
(``climio_io``) over the same :class:`~climio.model.output.ModelOutput` and
:class:`~climio.model.input.ModelInput` the Python API uses.

``libclimio`` is plain C and MPI (:mod:`climio.capi.build`): with I/O servers in the launch (``climio serve``) it
sends every call to them (``served.c``) and the model's ranks never load Python. Without servers it loads
``libclimio_py``, cffi's embedding of a Python interpreter, which imports :mod:`climio.capi.bridge`; every C
entry point then dispatches to :mod:`climio.capi.calls`. docs/model-api.md is the reference and the PIO2
porting guide.
"""
