"""NCO's compression flags (-L, --ppc, --baa) on every command that writes: the filters and quantization are
declared, the values are the uncompressed ones (or netCDF4-python's quantization of them), on real files too."""

from __future__ import annotations

from pathlib import Path

import sys

import netCDF4
import numpy as np
import pytest
from conftest import leftovers, one_error_line

sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))
from climio_batch import Batch  # noqa: E402

REAL = Path(__file__).parent / "data" / "real"
TAS = REAL / "tas_Amon_EC-EARTH_historical_r1i1p1_185001-185912.nc"
SHAPE = ("--shape", "40,12,16")

# Every climio run of this file goes in one table per rank count (helpers/climio_batch.py: one launch each, every
# case captured as a process of its own); each ``prepare_*`` function adds a test's runs, each writing into a
# directory of its own (``runs.folder(name)``), and makes its inputs. Generated inputs come from a first table.
PREPARE = []


def prepare(fn):  # type: ignore[no-untyped-def]
    PREPARE.append(fn)
    return fn


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """climio gen's inputs: a 40x12x16 field (plain, for --cmp) and a 1200x4x5 one (for eva)."""
    gen = Batch(tmp_path_factory.mktemp("inputs"))
    paths = {"plain": gen.folder("plain") / "plain.nc", "eva": gen.folder("eva") / "pr.nc"}
    gen.add("plain", ["gen", "cmip", paths["plain"], *SHAPE])
    gen.add("eva", ["gen", "cmip", paths["eva"], "--shape", "1200,4,5"])
    for name in paths:
        assert gen.result(name).returncode == 0, gen.result(name).stderr
    return paths


@pytest.fixture(scope="module")
def runs(inputs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Batch:
    b = Batch(tmp_path_factory.mktemp("runs"))
    for fn in PREPARE:
        fn(b, inputs)
    return b


def quantized(values: np.ndarray, digits: int, tmp: Path) -> np.ndarray:
    """netCDF4-python's (netCDF-C's) Granular BitRound of ``values``, written serially: the independent reference."""
    with netCDF4.Dataset(tmp / "reference.nc", "w") as ds:
        for k, n in enumerate(values.shape):
            ds.createDimension(f"d{k}", n)
        var = ds.createVariable("v", values.dtype, tuple(f"d{k}" for k in range(values.ndim)),
                                significant_digits=digits, quantize_mode="GranularBitRound")
        var[...] = values
    with netCDF4.Dataset(tmp / "reference.nc") as ds:
        return ds["v"][...].data


@prepare
def prepare_gen_with_deflate_and_ppc(b: Batch, inputs: dict[str, Path]) -> None:
    for nranks in (None, 3):
        b.add(f"gen-plain-{nranks}", ["gen", "cmip", b.folder(f"gen-plain-{nranks}") / "plain.nc", *SHAPE], nranks)
        b.add(f"gen-packed-{nranks}", ["gen", "cmip", b.folder(f"gen-packed-{nranks}") / "packed.nc", *SHAPE, "-L",
                                       "1", "--ppc", "default=3"], nranks)


@pytest.mark.parametrize("nranks", [None, 3])
def test_gen_with_deflate_and_ppc(tmp_path: Path, runs: Batch, nranks: int | None) -> None:
    plain, packed = runs.folder(f"gen-plain-{nranks}") / "plain.nc", runs.folder(f"gen-packed-{nranks}") / "packed.nc"
    assert runs.result(f"gen-plain-{nranks}").returncode == 0  # gen cmip plain SHAPE
    result = runs.result(f"gen-packed-{nranks}")  # gen cmip packed SHAPE -L 1 --ppc default=3
    assert result.returncode == 0 and "mode hdf5" in result.stdout, result.stderr
    with netCDF4.Dataset(plain) as a, netCDF4.Dataset(packed) as b:
        assert b.data_model == "NETCDF4"
        pr = b["pr"]
        assert pr.filters()["zlib"] and pr.filters()["complevel"] == 1 and pr.filters()["shuffle"]
        assert pr.quantization() == (3, "GranularBitRound")
        assert b["lat"].quantization() is None and b["time_bnds"].quantization() is None  # coordinates exact
        assert np.array_equal(b["lat"][:], a["lat"][:]) and np.array_equal(b["time_bnds"][:], a["time_bnds"][:])
        assert np.array_equal(pr[:].data, quantized(a["pr"][:].data, 3, tmp_path))


@prepare
def prepare_subset_and_eva_compressed_real_file(b: Batch, inputs: dict[str, Path]) -> None:
    b.add("real-tas", ["subset", "-v", "tas", "-L", "2", "--ppc", "tas=4", "--baa", "GranularBR", TAS,
                       b.folder("real-tas") / "tas.nc"], 2)
    b.add("real-exact", ["subset", "-v", "tas", "-L", "5", TAS, b.folder("real-exact") / "exact.nc"])


def test_subset_and_eva_compressed_real_file(tmp_path: Path, runs: Batch) -> None:
    out = runs.folder("real-tas") / "tas.nc"
    result = runs.result("real-tas")  # subset -v tas -L 2 --ppc tas=4 --baa GranularBR TAS out at 2 ranks
    assert result.returncode == 0, result.stderr
    with netCDF4.Dataset(TAS) as a, netCDF4.Dataset(out) as b:
        tas = b["tas"]
        assert tas.filters()["complevel"] == 2 and tas.quantization() == (4, "GranularBitRound")
        assert np.array_equal(tas[:].data, quantized(a["tas"][:].data, 4, tmp_path))
        assert np.array_equal(b["lat"][:], a["lat"][:])
    exact = runs.folder("real-exact") / "exact.nc"
    assert runs.result("real-exact").returncode == 0  # subset -v tas -L 5 TAS exact, plainly
    with netCDF4.Dataset(TAS) as a, netCDF4.Dataset(exact) as b:
        assert b["tas"].filters()["complevel"] == 5 and np.array_equal(b["tas"][:], a["tas"][:])


@prepare
def prepare_eva_output_compressed(b: Batch, inputs: dict[str, Path]) -> None:
    b.add("eva-plain", ["eva", inputs["eva"], b.folder("eva-plain") / "plain.nc"], 2)
    b.add("eva-packed", ["eva", inputs["eva"], b.folder("eva-packed") / "packed.nc", "-L", "1"], 2)


def test_eva_output_compressed(runs: Batch) -> None:
    # the input: gen cmip pr.nc --shape 1200,4,5 (made with the inputs)
    plain, packed = runs.folder("eva-plain") / "plain.nc", runs.folder("eva-packed") / "packed.nc"
    assert runs.result("eva-plain").returncode == 0  # eva pr.nc plain at 2 ranks
    result = runs.result("eva-packed")  # eva pr.nc packed -L 1 at 2 ranks
    assert result.returncode == 0, result.stderr
    with netCDF4.Dataset(plain) as a, netCDF4.Dataset(packed) as b:
        assert b.data_model == "NETCDF4" and b["return_level"].filters()["complevel"] == 1
        for name in ("threshold", "scale", "shape", "return_level"):
            assert np.array_equal(a[name][:], b[name][:], equal_nan=True)


COMPRESSION_ERRORS = [(("--mode", "cdf5", "-L", "1"), ("x.nc", "use --mode hdf5")),
                      (("-L", "12"), ("-L 12", "0 (none) to 9")),
                      (("--ppc", "pr"), ("--ppc 'pr'", "VAR=NSD")),
                      (("--ppc", "pr=9"), ("'pr'", "at most 7 significant digits")),
                      (("--ppc", "rain=3"), ("--ppc", "rain")),
                      (("--ppc", "pr=3", "--baa", "zfp"), ("--baa 'zfp'",))]


@prepare
def prepare_compression_errors(b: Batch, inputs: dict[str, Path]) -> None:
    for k, (args, _) in enumerate(COMPRESSION_ERRORS):  # one directory for all: none of them may write
        b.add(f"compression-error-{k}", ["gen", "cmip", b.folder("compression-errors") / "x.nc", *SHAPE, *args])


def test_compression_errors(runs: Batch) -> None:
    tmp_path = runs.folder("compression-errors")
    out = tmp_path / "x.nc"
    for k, (_, needles) in enumerate(COMPRESSION_ERRORS):  # gen cmip out SHAPE ARGS, plainly
        one_error_line(runs.result(f"compression-error-{k}"), *needles)  # type: ignore[arg-type]
    assert not out.exists() and leftovers(str(tmp_path)) == []


CORDEX = REAL / "pr_NAM-22_NOAA-GFDL-GFDL-ESM2M_rcp45_r1i1p1_OURANOS-CRCM5_v1_day_20510101-20551231.nc"


def storage(path: Path) -> dict[str, tuple[object, object]]:
    with netCDF4.Dataset(path) as ds:
        return {name: (v.filters(), v.chunking()) for name, v in ds.variables.items()}


CORDEX_CUT = ("-v", "pr", "-d", "time,0,99", "-d", "rlat,1,2")


@prepare
def prepare_subset_keeps_the_inputs_compression(b: Batch, inputs: dict[str, Path]) -> None:
    b.add("cordex-ours", ["subset", *CORDEX_CUT, CORDEX, b.folder("cordex-ours") / "ours.nc"], 2)
    b.add("cordex-classic", ["subset", *CORDEX_CUT, "--mode", "cdf5", CORDEX,
                             b.folder("cordex-classic") / "classic.nc"])


def test_subset_keeps_the_inputs_compression_as_ncks_does(tmp_path: Path, runs: Batch) -> None:
    ours, nco = runs.folder("cordex-ours") / "ours.nc", tmp_path / "nco.nc"
    cut = CORDEX_CUT
    assert runs.result("cordex-ours").returncode == 0  # subset CUT CORDEX ours at 2 ranks
    import subprocess

    subprocess.run(["ncks", "-O", *cut, str(CORDEX), str(nco)], check=True, capture_output=True)
    kept, expected = storage(ours), storage(nco)
    assert kept["pr"][0]["zlib"] and kept["pr"][0]["complevel"] == 1 and kept["pr"][1] == [1, 2, 4]
    assert {n: kept[n] for n in expected} == expected  # deflate, shuffle and chunks of every variable, as ncks
    with netCDF4.Dataset(ours) as a, netCDF4.Dataset(nco) as b:
        assert np.array_equal(a["pr"][:], b["pr"][:])
    classic = runs.folder("cordex-classic") / "classic.nc"  # a classic output stores no filters: dropped, not refused
    assert runs.result("cordex-classic").returncode == 0  # subset CUT --mode cdf5 CORDEX classic, plainly
    with netCDF4.Dataset(classic) as c, netCDF4.Dataset(nco) as b:
        assert c.data_model == "NETCDF3_64BIT_DATA" and np.array_equal(c["pr"][:], b["pr"][:])


@prepare
def prepare_chunk_sizes(b: Batch, inputs: dict[str, Path]) -> None:
    for nranks in (None, 2):
        b.add(f"chunks-{nranks}", ["gen", "cmip", b.folder(f"chunks-{nranks}") / "k.nc", *SHAPE, "-L", "1", "--cnk_dmn",
                                   "time,7", "--cnk_dmn", "lat,50"], nranks)
        b.add(f"chunks-cut-{nranks}", ["subset", "-d", "time,0,9", "--cnk_dmn", "time,4", CORDEX,
                                       b.folder(f"chunks-cut-{nranks}") / "cut.nc"])
        for k, bad in enumerate(("depth,3", "time,0")):  # refused with -O over an existing output
            folder = b.folder(f"chunks-bad{k}-{nranks}")
            (folder / "k.nc").write_bytes(b"an existing output\n")
            b.add(f"chunks-bad{k}-{nranks}", ["gen", "cmip", folder / "k.nc", *SHAPE, "--cnk_dmn", bad, "-O"])


@pytest.mark.parametrize("nranks", [None, 2])
def test_chunk_sizes_as_ncks_cnk_dmn(runs: Batch, nranks: int | None) -> None:
    out = runs.folder(f"chunks-{nranks}") / "k.nc"
    result = runs.result(f"chunks-{nranks}")  # gen cmip out SHAPE -L 1 --cnk_dmn time,7 --cnk_dmn lat,50
    assert result.returncode == 0, result.stderr
    with netCDF4.Dataset(out) as ds:
        assert ds["pr"].chunking() == [7, 12, 16] and ds["time_bnds"].chunking() == [7, 2]  # lat: at most 12
        assert ds["pr"].filters()["complevel"] == 1
    cut = runs.folder(f"chunks-cut-{nranks}") / "cut.nc"
    assert runs.result(f"chunks-cut-{nranks}").returncode == 0  # subset -d time,0,9 --cnk_dmn time,4 CORDEX cut
    with netCDF4.Dataset(cut) as ds:
        assert ds["pr"].chunking() == [4, 3, 4] and ds["pr"].filters()["complevel"] == 1  # deflate kept
    # gen cmip k.nc SHAPE --cnk_dmn depth,3 -O (and time,0), plainly
    one_error_line(runs.result(f"chunks-bad0-{nranks}"), "--cnk_dmn", "depth")  # type: ignore[arg-type]
    one_error_line(runs.result(f"chunks-bad1-{nranks}"), "--cnk_dmn 'time,0'")  # type: ignore[arg-type]


@prepare
def prepare_level_0(b: Batch, inputs: dict[str, Path]) -> None:
    b.add("level0", ["subset", "-v", "pr", "-L", "0", CORDEX, b.folder("level0") / "plain.nc"])


def test_level_0_removes_the_inputs_deflate(runs: Batch) -> None:
    out = runs.folder("level0") / "plain.nc"
    assert runs.result("level0").returncode == 0  # subset -v pr -L 0 CORDEX out, plainly
    with netCDF4.Dataset(out) as ds, netCDF4.Dataset(CORDEX) as a:
        assert not ds["pr"].filters()["zlib"] and np.array_equal(ds["pr"][:], a["pr"][:])


def pipeline(path: Path) -> dict[str, list[str]]:
    """Each variable's storage as ``ncdump -hs`` shows it (an independent reader): filter, shuffle, deflate,
    Fletcher-32 and chunk lines."""
    import subprocess

    out: dict[str, list[str]] = {}
    dump = subprocess.run(["ncdump", "-hs", str(path)], capture_output=True, text=True, check=True).stdout
    for line in dump.split("\n"):
        name, _, rest = line.strip().partition(":_")
        if rest.split(" ")[0] in ("Filter", "Shuffle", "DeflateLevel", "Fletcher32", "ChunkSizes"):
            out.setdefault(name, []).append(rest.rstrip(" ;"))
    return out


CHAINS = {"shf|bz2,5": ['Shuffle = "true"', 'Filter = "307,5"'], "bz2|f32": ['Fletcher32 = "true"',
          'Filter = "307,1"'], "lz4": ['Filter = "32004"'], "szip,16": ['Filter = "4,32,16"'],
          "dfl": ['Shuffle = "true"', "DeflateLevel = 1"],
          "gbr,3|shf|dfl,2": ['Shuffle = "true"', "DeflateLevel = 2"]}


@prepare
def prepare_cmp_codec_chains(b: Batch, inputs: dict[str, Path]) -> None:
    for nranks in (None, 3):
        for k, chain in enumerate(CHAINS):
            b.add(f"chain{k}-{nranks}", ["gen", "cmip", b.folder(f"chain{k}-{nranks}") / "c.nc", *SHAPE, "--cmp", chain,
                                         "-O"], nranks)


@pytest.mark.parametrize("nranks", [None, 3])
def test_cmp_codec_chains_as_ncks(tmp_path: Path, inputs: dict[str, Path], runs: Batch, nranks: int | None) -> None:
    """NCO's --cmp: each chain's filters are declared on every numeric variable, the values are exact (or netCDF-C's
    quantization of them), at 1 and 3 ranks; szip leaves out the 1-D variables HDF5 cannot szip."""
    plain = inputs["plain"]  # gen cmip plain.nc SHAPE
    with netCDF4.Dataset(plain) as ds:
        truth = ds["pr"][:].data
    chains = CHAINS
    for k, (chain, expected) in enumerate(chains.items()):
        out = runs.folder(f"chain{k}-{nranks}") / "c.nc"
        result = runs.result(f"chain{k}-{nranks}")  # gen cmip out SHAPE --cmp CHAIN -O
        assert result.returncode == 0 and "mode hdf5" in result.stdout, (chain, result.stderr)
        storage = pipeline(out)
        assert storage["pr"] == ["ChunkSizes = 1, 12, 16", *expected], chain
        assert storage["time"][1:] == ([] if chain.startswith("szip") else expected), chain  # 1-D: no szip
        with netCDF4.Dataset(out) as ds:
            quantized_ = chain.startswith("gbr")
            assert ds["pr"].quantization() == ((3, "GranularBitRound") if quantized_ else None)
            assert ds["lat"].quantization() is None
            assert np.array_equal(ds["pr"][:].data, quantized(truth, 3, tmp_path) if quantized_ else truth), chain


def filters_input(src: Path) -> None:
    values = np.random.default_rng(0).random((30, 20, 40)).astype("f4")
    with netCDF4.Dataset(src, "w") as ds:
        for dim, n in (("time", None), ("y", 20), ("x", 40)):
            ds.createDimension(dim, n)
        ds.createVariable("time", "f8", ("time",))[:] = np.arange(30)
        ds.createVariable("a", "f4", ("time", "y", "x"), compression="bzip2", complevel=3,
                          chunksizes=(5, 20, 40))[:] = values
        ds.createVariable("b", "f4", ("time", "y", "x"), compression="szip", szip_pixels_per_block=8,
                          chunksizes=(2, 10, 40))[:] = values
        ds.createVariable("c", "i2", ("time", "y", "x"), zlib=True, complevel=2, fletcher32=True,
                          chunksizes=(1, 20, 40))[:] = values * 100


@prepare
def prepare_subset_keeps_each_variables_filters(b: Batch, inputs: dict[str, Path]) -> None:
    src = b.folder("filters") / "in.nc"
    filters_input(src)
    b.add("filters", ["subset", "-d", "time,3,20", src, b.folder("filters") / "out.nc"], 2)
    replaced = b.folder("filters-cmp") / "out.nc"
    replaced.write_bytes(b"an existing output, replaced with -O\n")
    b.add("filters-cmp", ["subset", "--cmp", "shf|bz2,2", "-O", src, replaced])


def test_subset_keeps_each_variables_filters(runs: Batch) -> None:
    """bzip2, szip and Fletcher-32 + deflate inputs keep their own pipelines and chunks (ncks 5.1.4 gives every
    variable the first one's filter instead); --cmp replaces them all."""
    src = runs.folder("filters") / "in.nc"  # filters_input(src)
    out = runs.folder("filters") / "out.nc"
    assert runs.result("filters").returncode == 0  # subset -d time,3,20 src out at 2 ranks
    before, after = pipeline(src), pipeline(out)
    for name in "abc":
        assert after[name] == before[name], name
    with netCDF4.Dataset(src) as a, netCDF4.Dataset(out) as b:
        for name in "abc":
            assert np.array_equal(a[name][3:21], b[name][:])
    out = runs.folder("filters-cmp") / "out.nc"
    assert runs.result("filters-cmp").returncode == 0  # subset --cmp "shf|bz2,2" -O src out, plainly
    assert {name: pipeline(out)[name][1:] for name in "abc"} == {n: ['Shuffle = "true"', 'Filter = "307,2"']
                                                                 for n in "abc"}


CMP_ERRORS = [(("--cmp", "shf|lzma"), ("--cmp 'shf|lzma'", "'lzma' is no codec")),
              (("--cmp", "btr"), ("--cmp 'btr'", "significant bits")),
              (("--cmp", "dfl", "-L", "1"), ("-L 1 and --cmp 'dfl'",)),
              (("--cmp", "szip,7"), ("szip,7", "one even number"))]


@prepare
def prepare_cmp_errors(b: Batch, inputs: dict[str, Path]) -> None:
    from climio.core.ncio.compression import available_filters

    out = b.folder("cmp-errors") / "x.nc"  # one directory for all: none of them may write
    for k, (args, _) in enumerate(CMP_ERRORS):
        b.add(f"cmp-error-{k}", ["gen", "cmip", out, *SHAPE, *args])
    if not available_filters()["zstd"]:
        b.add("cmp-error-zstd", ["gen", "cmip", out, *SHAPE, "--cmp", "zst,3"], 2)


def test_cmp_errors(runs: Batch) -> None:
    from climio.core.ncio.compression import available_filters

    tmp_path = runs.folder("cmp-errors")
    out = tmp_path / "x.nc"
    for k, (_, needles) in enumerate(CMP_ERRORS):  # gen cmip out SHAPE ARGS, plainly
        one_error_line(runs.result(f"cmp-error-{k}"), *needles)  # type: ignore[arg-type]
    if not available_filters()["zstd"]:  # gen cmip out SHAPE --cmp zst,3 at 2 ranks
        one_error_line(runs.result("cmp-error-zstd"), "x.nc",  # type: ignore[arg-type]
                       "cannot apply zstd (filter id 32015)", "HDF5_PLUGIN_PATH")
    assert not out.exists() and leftovers(str(tmp_path)) == []


CMIP6 = {"o3": REAL / "o3_AERmon_MPI-ESM1-2-LR_historical_r1i1p1f1_gn_185001.nc",
         "tas_icon": REAL / "tas_Amon_ICON-ESM-LR_historical_r1i1p1f1_gn_185001.nc",
         "tas_cesm": REAL / "tas_day_CESM2-WACCM_historical_r1i1p1f1_gn_20000101-20091231.nc"}
NCO_BAA = {"BitGroom": 0, "GranularBR": 4, "BitRound": 8}  # ncks --baa numbers of netCDF-C's three algorithms


PPC_CASES = [("o3", "GranularBR", 3), ("o3", "BitGroom", 3), ("o3", "BitRound", 10), ("tas_icon", "GranularBR", 2),
             ("tas_cesm", "BitGroom", 5)]


@prepare
def prepare_ppc_equals_ncks(b: Batch, inputs: dict[str, Path]) -> None:
    for case, algorithm, keep in PPC_CASES:
        src, name = CMIP6[case], case.split("_")[0]
        ours = b.folder(f"ppc-{case}-{algorithm}-{keep}") / "ours.nc"
        b.add(f"ppc-{case}-{algorithm}-{keep}", ["subset", "-v", name, "-L", "1", "--baa", algorithm, "--ppc",
                                                 f"{name}={keep}", src, ours], 2)
    for case in CMIP6:  # the lossless output depends on the file only
        src, name = CMIP6[case], case.split("_")[0]
        b.add(f"lossless-{case}", ["subset", "-v", name, "-L", "1", src, b.folder(f"lossless-{case}") / "lossless.nc"])


@pytest.mark.parametrize("case,algorithm,keep", PPC_CASES)
def test_ppc_equals_ncks_on_real_cmip6_files(tmp_path: Path, runs: Batch, case: str, algorithm: str,
                                             keep: int) -> None:
    """``--ppc`` with each algorithm on real CMIP6 files (4-D ozone, ICON's unstructured tas, CESM2 daily tas)
    gives exactly ncks's values, every value within the algorithm's documented error bound
    (half a unit in the last kept digit, or bit), and a smaller file than deflate alone."""
    import subprocess

    src, name = CMIP6[case], case.split("_")[0]
    ours, nco = runs.folder(f"ppc-{case}-{algorithm}-{keep}") / "ours.nc", tmp_path / "nco.nc"
    lossless = runs.folder(f"lossless-{case}") / "lossless.nc"
    # subset -v NAME -L 1 --baa ALGORITHM --ppc NAME=KEEP src ours at 2 ranks
    result = runs.result(f"ppc-{case}-{algorithm}-{keep}")
    assert result.returncode == 0, result.stderr
    subprocess.run(["ncks", "-O", "-7", "-L", "1", f"--baa={NCO_BAA[algorithm]}", "--ppc", f"{name}={keep}", "-v",
                    name, str(src), str(nco)], check=True, capture_output=True)
    assert runs.result(f"lossless-{case}").returncode == 0  # subset -v NAME -L 1 src lossless, plainly
    with netCDF4.Dataset(src) as s, netCDF4.Dataset(ours) as a, netCDF4.Dataset(nco) as b:
        for ds in (s, a, b):
            ds.set_auto_mask(False)
        x, q = s[name][:].astype("f8"), a[name][:]
        assert np.array_equal(q, b[name][:])  # bit for bit, fill values included
        mode = {"GranularBR": "GranularBitRound"}.get(algorithm, algorithm)  # netCDF-C's _Quantize... attribute
        unit = "Bits" if algorithm == "BitRound" else "Digits"
        assert a[name].quantization() == (keep, mode)  # ncks writes it without netCDF-C's leading underscore
        assert b[name].getncattr(f"Quantize{mode}NumberOfSignificant{unit}") == keep
        data = (x != s[name].getncattr("_FillValue")) & (x != 0)
        assert np.array_equal(q[~data], s[name][:][~data])  # fill values and zeros untouched
        if algorithm == "BitRound":
            bound = np.exp2(np.floor(np.log2(np.abs(x[data]))) - keep - 1)
        else:
            bound = 0.5 * 10.0 ** (np.floor(np.log10(np.abs(x[data]))) - keep + 1)
        assert np.all(np.abs(q[data] - x[data]) <= bound)
    assert ours.stat().st_size < lossless.stat().st_size
