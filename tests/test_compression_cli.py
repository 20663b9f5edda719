"""NCO's compression flags (-L, --ppc, --baa) on every command that writes: the filters and quantization are
declared, the values are the uncompressed ones (or netCDF4-python's quantization of them), on real files too."""

from __future__ import annotations

from pathlib import Path

import netCDF4
import numpy as np
import pytest
from conftest import climio, leftovers, one_error_line

REAL = Path(__file__).parent / "data" / "real"
TAS = REAL / "tas_Amon_EC-EARTH_historical_r1i1p1_185001-185912.nc"
SHAPE = ("--shape", "40,12,16")


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


@pytest.mark.parametrize("nranks", [None, 3])
def test_gen_with_deflate_and_ppc(tmp_path: Path, nranks: int | None) -> None:
    plain, packed = tmp_path / "plain.nc", tmp_path / "packed.nc"
    assert climio("gen", "cmip", str(plain), *SHAPE, nranks=nranks).returncode == 0
    result = climio("gen", "cmip", str(packed), *SHAPE, "-L", "1", "--ppc", "default=3", nranks=nranks)
    assert result.returncode == 0 and "mode hdf5" in result.stdout, result.stderr
    with netCDF4.Dataset(plain) as a, netCDF4.Dataset(packed) as b:
        assert b.data_model == "NETCDF4"
        pr = b["pr"]
        assert pr.filters()["zlib"] and pr.filters()["complevel"] == 1 and pr.filters()["shuffle"]
        assert pr.quantization() == (3, "GranularBitRound")
        assert b["lat"].quantization() is None and b["time_bnds"].quantization() is None  # coordinates exact
        assert np.array_equal(b["lat"][:], a["lat"][:]) and np.array_equal(b["time_bnds"][:], a["time_bnds"][:])
        assert np.array_equal(pr[:].data, quantized(a["pr"][:].data, 3, tmp_path))


def test_subset_and_eva_compressed_real_file(tmp_path: Path) -> None:
    out = tmp_path / "tas.nc"
    result = climio("subset", "-v", "tas", "-L", "2", "--ppc", "tas=4", "--baa", "GranularBR", str(TAS), str(out),
                    nranks=2)
    assert result.returncode == 0, result.stderr
    with netCDF4.Dataset(TAS) as a, netCDF4.Dataset(out) as b:
        tas = b["tas"]
        assert tas.filters()["complevel"] == 2 and tas.quantization() == (4, "GranularBitRound")
        assert np.array_equal(tas[:].data, quantized(a["tas"][:].data, 4, tmp_path))
        assert np.array_equal(b["lat"][:], a["lat"][:])
    exact = tmp_path / "exact.nc"
    assert climio("subset", "-v", "tas", "-L", "5", str(TAS), str(exact)).returncode == 0
    with netCDF4.Dataset(TAS) as a, netCDF4.Dataset(exact) as b:
        assert b["tas"].filters()["complevel"] == 5 and np.array_equal(b["tas"][:], a["tas"][:])


def test_eva_output_compressed(tmp_path: Path) -> None:
    data = tmp_path / "pr.nc"
    assert climio("gen", "cmip", str(data), "--shape", "1200,4,5").returncode == 0
    plain, packed = tmp_path / "plain.nc", tmp_path / "packed.nc"
    assert climio("eva", str(data), str(plain), nranks=2).returncode == 0
    result = climio("eva", str(data), str(packed), "-L", "1", nranks=2)
    assert result.returncode == 0, result.stderr
    with netCDF4.Dataset(plain) as a, netCDF4.Dataset(packed) as b:
        assert b.data_model == "NETCDF4" and b["return_level"].filters()["complevel"] == 1
        for name in ("threshold", "scale", "shape", "return_level"):
            assert np.array_equal(a[name][:], b[name][:], equal_nan=True)


def test_compression_errors(tmp_path: Path) -> None:
    out = tmp_path / "x.nc"
    one_error_line(climio("gen", "cmip", str(out), *SHAPE, "--mode", "cdf5", "-L", "1"), "x.nc", "use --mode hdf5")
    one_error_line(climio("gen", "cmip", str(out), *SHAPE, "-L", "12"), "-L 12", "0 (none) to 9")
    one_error_line(climio("gen", "cmip", str(out), *SHAPE, "--ppc", "pr"), "--ppc 'pr'", "VAR=NSD")
    one_error_line(climio("gen", "cmip", str(out), *SHAPE, "--ppc", "pr=9"), "'pr'", "at most 7 significant digits")
    one_error_line(climio("gen", "cmip", str(out), *SHAPE, "--ppc", "rain=3"), "--ppc", "rain")
    one_error_line(climio("gen", "cmip", str(out), *SHAPE, "--ppc", "pr=3", "--baa", "zfp"), "--baa 'zfp'")
    assert not out.exists() and leftovers(str(tmp_path)) == []


CORDEX = REAL / "pr_NAM-22_NOAA-GFDL-GFDL-ESM2M_rcp45_r1i1p1_OURANOS-CRCM5_v1_day_20510101-20551231.nc"


def storage(path: Path) -> dict[str, tuple[object, object]]:
    with netCDF4.Dataset(path) as ds:
        return {name: (v.filters(), v.chunking()) for name, v in ds.variables.items()}


def test_subset_keeps_the_inputs_compression_as_ncks_does(tmp_path: Path) -> None:
    ours, nco = tmp_path / "ours.nc", tmp_path / "nco.nc"
    cut = ("-v", "pr", "-d", "time,0,99", "-d", "rlat,1,2")
    assert climio("subset", *cut, str(CORDEX), str(ours), nranks=2).returncode == 0
    import subprocess

    subprocess.run(["ncks", "-O", *cut, str(CORDEX), str(nco)], check=True, capture_output=True)
    kept, expected = storage(ours), storage(nco)
    assert kept["pr"][0]["zlib"] and kept["pr"][0]["complevel"] == 1 and kept["pr"][1] == [1, 2, 4]
    assert {n: kept[n] for n in expected} == expected  # deflate, shuffle and chunks of every variable, as ncks
    with netCDF4.Dataset(ours) as a, netCDF4.Dataset(nco) as b:
        assert np.array_equal(a["pr"][:], b["pr"][:])
    classic = tmp_path / "classic.nc"  # a classic output stores no filters: they are dropped, not refused
    assert climio("subset", *cut, "--mode", "cdf5", str(CORDEX), str(classic)).returncode == 0
    with netCDF4.Dataset(classic) as c, netCDF4.Dataset(nco) as b:
        assert c.data_model == "NETCDF3_64BIT_DATA" and np.array_equal(c["pr"][:], b["pr"][:])


@pytest.mark.parametrize("nranks", [None, 2])
def test_chunk_sizes_as_ncks_cnk_dmn(tmp_path: Path, nranks: int | None) -> None:
    out = tmp_path / "k.nc"
    result = climio("gen", "cmip", str(out), *SHAPE, "-L", "1", "--cnk_dmn", "time,7", "--cnk_dmn", "lat,50",
                    nranks=nranks)
    assert result.returncode == 0, result.stderr
    with netCDF4.Dataset(out) as ds:
        assert ds["pr"].chunking() == [7, 12, 16] and ds["time_bnds"].chunking() == [7, 2]  # lat: at most 12
        assert ds["pr"].filters()["complevel"] == 1
    cut = tmp_path / "cut.nc"
    assert climio("subset", "-d", "time,0,9", "--cnk_dmn", "time,4", str(CORDEX), str(cut)).returncode == 0
    with netCDF4.Dataset(cut) as ds:
        assert ds["pr"].chunking() == [4, 3, 4] and ds["pr"].filters()["complevel"] == 1  # deflate kept
    one_error_line(climio("gen", "cmip", str(out), *SHAPE, "--cnk_dmn", "depth,3", "-O"), "--cnk_dmn", "depth")
    one_error_line(climio("gen", "cmip", str(out), *SHAPE, "--cnk_dmn", "time,0", "-O"), "--cnk_dmn 'time,0'")


def test_level_0_removes_the_inputs_deflate(tmp_path: Path) -> None:
    out = tmp_path / "plain.nc"
    assert climio("subset", "-v", "pr", "-L", "0", str(CORDEX), str(out)).returncode == 0
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


@pytest.mark.parametrize("nranks", [None, 3])
def test_cmp_codec_chains_as_ncks(tmp_path: Path, nranks: int | None) -> None:
    """NCO's --cmp: each chain's filters are declared on every numeric variable, the values are exact (or netCDF-C's
    quantization of them), at 1 and 3 ranks; szip leaves out the 1-D variables HDF5 cannot szip."""
    plain = tmp_path / "plain.nc"
    assert climio("gen", "cmip", str(plain), *SHAPE).returncode == 0
    with netCDF4.Dataset(plain) as ds:
        truth = ds["pr"][:].data
    chains = {"shf|bz2,5": ['Shuffle = "true"', 'Filter = "307,5"'], "bz2|f32": ['Fletcher32 = "true"',
              'Filter = "307,1"'], "lz4": ['Filter = "32004"'], "szip,16": ['Filter = "4,32,16"'],
              "dfl": ['Shuffle = "true"', "DeflateLevel = 1"],
              "gbr,3|shf|dfl,2": ['Shuffle = "true"', "DeflateLevel = 2"]}
    for chain, expected in chains.items():
        out = tmp_path / "c.nc"
        result = climio("gen", "cmip", str(out), *SHAPE, "--cmp", chain, "-O", nranks=nranks)
        assert result.returncode == 0 and "mode hdf5" in result.stdout, (chain, result.stderr)
        storage = pipeline(out)
        assert storage["pr"] == ["ChunkSizes = 1, 12, 16", *expected], chain
        assert storage["time"][1:] == ([] if chain.startswith("szip") else expected), chain  # 1-D: no szip
        with netCDF4.Dataset(out) as ds:
            quantized_ = chain.startswith("gbr")
            assert ds["pr"].quantization() == ((3, "GranularBitRound") if quantized_ else None)
            assert ds["lat"].quantization() is None
            assert np.array_equal(ds["pr"][:].data, quantized(truth, 3, tmp_path) if quantized_ else truth), chain


def test_subset_keeps_each_variables_filters(tmp_path: Path) -> None:
    """bzip2, szip and Fletcher-32 + deflate inputs keep their own pipelines and chunks (ncks 5.1.4 gives every
    variable the first one's filter instead); --cmp replaces them all."""
    src = tmp_path / "in.nc"
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
    out = tmp_path / "out.nc"
    assert climio("subset", "-d", "time,3,20", str(src), str(out), nranks=2).returncode == 0
    before, after = pipeline(src), pipeline(out)
    for name in "abc":
        assert after[name] == before[name], name
    with netCDF4.Dataset(src) as a, netCDF4.Dataset(out) as b:
        for name in "abc":
            assert np.array_equal(a[name][3:21], b[name][:])
    assert climio("subset", "--cmp", "shf|bz2,2", "-O", str(src), str(out)).returncode == 0
    assert {name: pipeline(out)[name][1:] for name in "abc"} == {n: ['Shuffle = "true"', 'Filter = "307,2"']
                                                                 for n in "abc"}


def test_cmp_errors(tmp_path: Path) -> None:
    from climio.core.ncio.compression import available_filters

    out = tmp_path / "x.nc"
    one_error_line(climio("gen", "cmip", str(out), *SHAPE, "--cmp", "shf|lzma"), "--cmp 'shf|lzma'",
                   "'lzma' is no codec")
    one_error_line(climio("gen", "cmip", str(out), *SHAPE, "--cmp", "btr"), "--cmp 'btr'", "significant bits")
    one_error_line(climio("gen", "cmip", str(out), *SHAPE, "--cmp", "dfl", "-L", "1"), "-L 1 and --cmp 'dfl'")
    one_error_line(climio("gen", "cmip", str(out), *SHAPE, "--cmp", "szip,7"), "szip,7", "one even number")
    if not available_filters()["zstd"]:
        one_error_line(climio("gen", "cmip", str(out), *SHAPE, "--cmp", "zst,3", nranks=2), "x.nc",
                       "cannot apply zstd (filter id 32015)", "HDF5_PLUGIN_PATH")
    assert not out.exists() and leftovers(str(tmp_path)) == []


CMIP6 = {"o3": REAL / "o3_AERmon_MPI-ESM1-2-LR_historical_r1i1p1f1_gn_185001.nc",
         "tas_icon": REAL / "tas_Amon_ICON-ESM-LR_historical_r1i1p1f1_gn_185001.nc",
         "tas_cesm": REAL / "tas_day_CESM2-WACCM_historical_r1i1p1f1_gn_20000101-20091231.nc"}
NCO_BAA = {"BitGroom": 0, "GranularBR": 4, "BitRound": 8}  # ncks --baa numbers of netCDF-C's three algorithms


@pytest.mark.parametrize("case,algorithm,keep", [("o3", "GranularBR", 3), ("o3", "BitGroom", 3), ("o3", "BitRound", 10),
                                                 ("tas_icon", "GranularBR", 2), ("tas_cesm", "BitGroom", 5)])
def test_ppc_equals_ncks_on_real_cmip6_files(tmp_path: Path, case: str, algorithm: str, keep: int) -> None:
    """``--ppc`` with each algorithm on real CMIP6 files (4-D ozone, ICON's unstructured tas, CESM2 daily tas)
    gives exactly ncks's values, every value within the algorithm's documented error bound
    (half a unit in the last kept digit, or bit), and a smaller file than deflate alone."""
    import subprocess

    src, name = CMIP6[case], case.split("_")[0]
    ours, nco, lossless = tmp_path / "ours.nc", tmp_path / "nco.nc", tmp_path / "lossless.nc"
    result = climio("subset", "-v", name, "-L", "1", "--baa", algorithm, "--ppc", f"{name}={keep}", str(src), str(ours),
                    nranks=2)
    assert result.returncode == 0, result.stderr
    subprocess.run(["ncks", "-O", "-7", "-L", "1", f"--baa={NCO_BAA[algorithm]}", "--ppc", f"{name}={keep}", "-v",
                    name, str(src), str(nco)], check=True, capture_output=True)
    assert climio("subset", "-v", name, "-L", "1", str(src), str(lossless)).returncode == 0
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
