"""How a netCDF-4 variable's values are stored: deflate with shuffle, and quantization (netCDF-C 4.9's
``nc_def_var_quantize``), declared with the variable before any data is written.

Compression is HDF5's, per chunk, so it needs a netCDF-4 file (mode ``hdf5``); parallel HDF5 writes
compressed chunks only collectively, which is how climio writes. Quantization zeroes the bits of each
float that lie below the requested precision (BitGroom and Granular BitRound keep ``nsd`` significant
decimal digits, BitRound ``nsb`` significant bits), so deflate then finds long runs of zero bits: lossy,
but within the documented bound, and undone by no reader (the values are simply less precise).

Other lossless HDF5 filters (szip, bzip2, lz4, zstd, or any by its registered id) go into the variable's
pipeline after shuffle and deflate when this netCDF-C/HDF5 build can apply them; filters that come as HDF5
plugins are found through ``HDF5_PLUGIN_PATH`` (climio points it at Debian's plugin directory when it is
unset: :mod:`climio.core.plugins`), and a reader of the file needs the same plugin.

NCO's names are used where NCO has them: ``-L`` (deflate level), ``--ppc VAR=NSD`` / ``default=NSD``,
``--baa`` (the quantization algorithm, GranularBR by default as in NCO 5), ``--cmp 'shf|dfl,1'`` (a codec
chain).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

import numpy as np

from climio.errors import ClimioError

DEFLATE_FILTER, SHUFFLE_FILTER, FLETCHER32_FILTER, SZIP_FILTER = 1, 2, 3, 4  # HDF5's built-in filter ids
FILTERS = {"deflate": 1, "szip": 4, "bzip2": 307, "lz4": 32004, "zstd": 32015}  # registered HDF5 filter ids
FILTER_NAMES = {**{ident: name for name, ident in FILTERS.items()}, SHUFFLE_FILTER: "shuffle",
                FLETCHER32_FILTER: "fletcher32"}
SZIP_NN, SZIP_EC = 32, 4  # szip's coding methods: nearest neighbour (netCDF's default) and entropy
DEFAULT_PARAMS = {"bzip2": (1,), "zstd": (3,), "lz4": (), "szip": (SZIP_NN, 32)}  # NCO's levels where it has them
QUANTIZE_MODES = {"BitGroom": 1, "GranularBR": 2, "BitRound": 3}  # netCDF-C's NC_QUANTIZE_* codes
QUANTIZE_LIMITS = {("f", 4): (7, 23), ("f", 8): (15, 52)}  # (most digits, most bits) of float32 and float64
DEFAULT_ALGORITHM = "GranularBR"


@dataclass(frozen=True)
class Compression:
    """``deflate`` level 0 (none) to 9 with ``shuffle``; ``quantize`` (algorithm, digits or bits) or None."""

    deflate: int = 0
    shuffle: bool = True
    quantize: tuple[str, int] | None = None
    filters: tuple[tuple[int, tuple[int, ...]], ...] = ()  # other HDF5 filters, in order: (id, parameters)

    def __post_init__(self) -> None:
        if not 0 <= self.deflate <= 9:
            raise ClimioError(f"deflate level {self.deflate}: use 0 (none) to 9", collective=True)
        for ident, params in self.filters:
            if ident == SZIP_FILTER and not (len(params) == 2 and params[1] in range(2, 33, 2)):
                raise ClimioError(f"szip,{','.join(map(str, params[1:]))}: give the pixels per block, one even "
                                  f"number 2 to 32", collective=True)
        if self.quantize is not None:
            algorithm, keep = self.quantize
            if algorithm not in QUANTIZE_MODES:
                raise ClimioError(f"quantization algorithm '{algorithm}': choose one of "
                                  f"{', '.join(QUANTIZE_MODES)}", collective=True)
            if keep < 1:
                raise ClimioError(f"{algorithm} needs at least 1 significant {self.unit}, got {keep}",
                                  collective=True)

    @property
    def unit(self) -> str:
        return "bit" if self.quantize is not None and self.quantize[0] == "BitRound" else "digit"

    @property
    def active(self) -> bool:
        return bool(self.deflate) or self.quantize is not None or bool(self.filters)


    def check(self, name: str, dtype: np.dtype) -> None:
        """Refuse quantization of a variable it cannot apply to, naming it."""
        if self.quantize is None:
            return
        algorithm, keep = self.quantize
        limits = QUANTIZE_LIMITS.get((dtype.kind, dtype.itemsize))
        if limits is None:
            kind = {"S": "char", "O": "string"}.get(dtype.kind, str(dtype))  # text as netCDF names it
            raise ClimioError(f"variable '{name}' is {kind}: quantization applies to float32 and float64 only "
                              f"(leave it out of --ppc)", collective=True)
        most = limits[1] if algorithm == "BitRound" else limits[0]
        if keep > most:
            raise ClimioError(f"variable '{name}' ({dtype}): {algorithm} keeps at most {most} significant "
                              f"{self.unit}s, not {keep}", collective=True)


NONE = Compression()
QUANTIZE_CODECS = {"BitGroom": "btg", "GranularBR": "gbr", "BitRound": "btr"}
CODEC_NAMES = {"shf": "shuffle", "shuffle": "shuffle", "dfl": "deflate", "deflate": "deflate", "zlib": "deflate",
               "f32": "fletcher32", "fletcher32": "fletcher32", "szp": "szip", "szip": "szip", "bz2": "bzip2",
               "bzip2": "bzip2", "lz4": "lz4", "zst": "zstd", "zstd": "zstd", "zstandard": "zstd",
               **{code: algorithm for algorithm, code in QUANTIZE_CODECS.items()},
               "bitgroom": "BitGroom", "granularbr": "GranularBR", "bitround": "BitRound"}


def parse_cmp(text: str) -> Compression:
    """NCO's ``--cmp`` codec chain, ``CODEC[,PARAM...]|...``: ``shf`` shuffle, ``dfl,LEVEL`` deflate (with
    shuffle, as NCO), ``bz2,LEVEL``, ``zst,LEVEL``, ``lz4``, ``szip,PIXELS_PER_BLOCK``, ``f32`` Fletcher-32,
    ``gbr,NSD``/``btg,NSD``/``btr,NSB`` quantization, or an HDF5 filter id with its parameters."""
    deflate, shuffle, quantize, filters = 0, False, None, []
    for part in text.split("|"):
        name, *values = [token.strip() for token in part.split(",")]
        codec = CODEC_NAMES.get(name.lower(), name if name.isdigit() else None)
        if codec is None or not all(v.isdigit() for v in values):
            raise ClimioError(f"--cmp '{text}': '{part}' is no codec: use CODEC[,PARAM]|... with shf, dfl, bz2, "
                              f"zst, lz4, szip, f32, gbr, btg, btr or an HDF5 filter id", collective=True)
        params = tuple(int(v) for v in values)
        if codec in QUANTIZE_MODES:
            if len(params) != 1:
                raise ClimioError(f"--cmp '{text}': {name} needs one number, the significant "
                                  f"{'bits' if codec == 'BitRound' else 'digits'} (e.g. {name},3)", collective=True)
            quantize = (codec, params[0])
        elif codec == "shuffle":
            shuffle = True
        elif codec == "deflate":
            deflate, shuffle = (params or (1,))[0], True
        elif codec == "fletcher32":
            filters.append((FLETCHER32_FILTER, ()))
        elif codec == "szip":
            filters.append((SZIP_FILTER, (SZIP_NN, *(params or DEFAULT_PARAMS["szip"][1:]))))
        else:
            filters.append((FILTERS[codec], params or DEFAULT_PARAMS[codec]) if codec in FILTERS
                           else (int(codec), params))
    return Compression(deflate, shuffle, quantize, tuple(filters))


def available_filters() -> dict[str, bool]:
    """Which of :data:`FILTERS` this netCDF-C build can apply (asked of a scratch netCDF-4 file in memory)."""
    import netCDF4

    from climio.core.ncio import libnetcdf

    with netCDF4.Dataset("climio-filters.nc", "w", format="NETCDF4", diskless=True, persist=False) as ds:
        return {name: libnetcdf.filter_available(libnetcdf.ncid(ds), ident) for name, ident in FILTERS.items()}


def parse_ppc(specs: Iterable[str], algorithm: str = DEFAULT_ALGORITHM) -> dict[str, tuple[str, int]]:
    """NCO's ``--ppc VAR1,VAR2=NSD`` / ``--ppc default=NSD`` (repeatable) -> {variable or 'default': (algorithm,
    NSD)}."""
    out: dict[str, tuple[str, int]] = {}
    for spec in specs:
        names, equals, value = spec.rpartition("=")
        if not equals or not names or not value.strip().lstrip("-").isdigit():
            raise ClimioError(f"--ppc '{spec}': use VAR=NSD (several: VAR1,VAR2=NSD) or default=NSD",
                              collective=True)
        for name in names.split(","):
            out[name.strip()] = (algorithm, int(value))
    return out


def parse_algorithm(text: str) -> str:
    """``--baa``: a netCDF-C quantization algorithm by name (case-insensitive; NCO's short names too)."""
    algorithm = CODEC_NAMES.get(text.lower())
    if algorithm not in QUANTIZE_MODES:
        raise ClimioError(f"--baa '{text}': choose BitGroom, GranularBR or BitRound", collective=True)
    return algorithm


@dataclass(frozen=True)
class Settings:
    """An output's compression as NCO's flags give it: ``-L`` deflate for every numeric variable, ``--ppc``
    significant digits per variable or ``default`` (every floating-point variable but coordinates)."""

    deflate: int | None = None  # None: as the variable had it (a subset keeps its input's), 0: none
    ppc: Mapping[str, tuple[str, int]] = field(default_factory=dict)
    chunk_sizes: Mapping[str, int] = field(default_factory=dict)  # NCO's --cnk_dmn: chunk size per dimension
    cmp: Compression | None = None  # NCO's --cmp: the codec chain of every numeric variable

    @property
    def active(self) -> bool:
        return self.deflate is not None or bool(self.ppc) or bool(self.chunk_sizes) or self.cmp is not None

    def for_variable(self, name: str, dtype: np.dtype, coordinate: bool, had: Compression) -> Compression:
        """The variable's compression: ``--cmp`` or ``-L`` if given, else what it had; quantization from
        ``--ppc`` by name, else its ``default`` or ``--cmp``'s (floating-point data variables only)."""
        quantize = self.ppc.get(name)
        if quantize is None and dtype.kind == "f" and not coordinate:
            quantize = self.ppc.get("default") or (self.cmp.quantize if self.cmp is not None else None)
        if self.cmp is not None:
            return replace(self.cmp, quantize=quantize)
        if self.deflate is None:
            return replace(had, quantize=quantize or had.quantize)
        return Compression(self.deflate, True, quantize or had.quantize)


def settings(deflate: int | None, ppc: Iterable[str] | None, algorithm: str | None,
             chunk_sizes: Iterable[str] | None = None, cmp: str | None = None) -> Settings:
    """:class:`Settings` from the command line's ``-L``, ``--ppc``, ``--baa``, ``--cnk_dmn`` and ``--cmp``."""
    if deflate is not None and not 0 <= deflate <= 9:
        raise ClimioError(f"-L {deflate}: the deflate level is 0 (none) to 9", collective=True)
    if deflate is not None and cmp is not None:
        raise ClimioError(f"-L {deflate} and --cmp '{cmp}': give one (--cmp 'shf|dfl,{deflate}' is -L {deflate})",
                          collective=True)
    chosen = parse_algorithm(algorithm) if algorithm else DEFAULT_ALGORITHM
    return Settings(deflate, parse_ppc(ppc or (), chosen), parse_chunk_sizes(chunk_sizes or ()),
                    parse_cmp(cmp) if cmp is not None else None)


def parse_chunk_sizes(specs: Iterable[str]) -> dict[str, int]:
    """NCO's ``--cnk_dmn DIM,SIZE`` (repeatable) -> {DIM: SIZE}."""
    out = {}
    for spec in specs:
        dim, comma, size = spec.partition(",")
        if not comma or not dim or not size.isdigit() or int(size) < 1:
            raise ClimioError(f"--cnk_dmn '{spec}': use DIM,SIZE with a positive SIZE, e.g. --cnk_dmn time,30",
                              collective=True)
        out[dim] = int(size)
    return out
