"""Commands behave as NCO and CDO users expect: list options that never swallow the files, no abbreviated options,
"did you mean" for a typo, inputs taken in time order, output names that say what the file is, and an exit status
that says what happened to the output (on a signal too)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import netCDF4
import numpy as np
import pytest
from conftest import DATA, climio_argv, leftovers, one_error_line

sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))
from climio_batch import Batch, Preparers  # noqa: E402

EC_EARTH = [str(DATA / "real" / f"tas_Amon_EC-EARTH_historical_r1i1p1_{years}.nc")
            for years in ("185001-185912", "186001-186912", "187001-187912")]
SHUFFLED = [EC_EARTH[2], EC_EARTH[0], EC_EARTH[1]]
MONTHLY_POT = ["-v", "tas", "--npy", "12", "--tail", "0.1", "--min-exceed", "3"]
RANKS = (None, 2)
prepare = Preparers()


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Batch:
    return Batch.prepared(tmp_path_factory.mktemp("runs"), prepare)


def values(path: Path | str) -> dict[str, np.ndarray]:
    with netCDF4.Dataset(path) as ds:
        ds.set_auto_mask(False)
        return {name: np.asarray(var[...]) for name, var in ds.variables.items()}


# -- the variable to analyse -------------------------------------------------------------------------------------

CESM2 = str(DATA / "real" / "tas_day_CESM2-WACCM_historical_r1i1p1f1_gn_20000101-20091231.nc")
FESOM = str(DATA / "real" / "fesom.mesh.diag.nc")


@prepare
def prepare_default_variable(b: Batch) -> None:
    for nranks in RANKS:
        b.add(f"only-{nranks}", ["eva", CESM2, b.folder(f"only-{nranks}") / "out.nc"], nranks)
        b.add(f"named-{nranks}", ["eva", "-v", "tas", CESM2, b.folder(f"named-{nranks}") / "out.nc"], nranks)
        b.add(f"several-{nranks}", ["eva", FESOM, b.folder(f"several-{nranks}") / "out.nc"], nranks)


@pytest.mark.parametrize("nranks", RANKS)
def test_eva_takes_the_files_one_data_variable(runs: Batch, nranks: int | None) -> None:
    """As CDO and NCO: CESM2's daily file holds tas (beside time_bnds, lat_bnds, lon_bnds), so no --var is needed,
    and the fits equal those of -v tas; a file of several data variables is refused with their names."""
    only, named = runs.result(f"only-{nranks}"), runs.result(f"named-{nranks}")
    assert only.returncode == 0 and named.returncode == 0, only.stderr + named.stderr
    assert only.stdout.startswith(f"wrote {runs.folder(f'only-{nranks}') / 'out.nc'}: GPD fits of tas at ")
    a, b = values(runs.folder(f"only-{nranks}") / "out.nc"), values(runs.folder(f"named-{nranks}") / "out.nc")
    assert a.keys() == b.keys()
    for name in a:
        assert np.array_equal(a[name], b[name], equal_nan=True), name
    one_error_line(runs.result(f"several-{nranks}"), FESOM, "data variables", "'gradient_sca_x'",  # type: ignore[arg-type]
                   "give --var (-v)")


# -- list options ------------------------------------------------------------------------------------------------

@prepare
def prepare_list_options(b: Batch) -> None:
    for nranks in RANKS:
        for name, periods in (("comma", ["--return-period", "5,20"]), ("words", ["--return-period", "5", "20"])):
            case = f"periods-{name}-{nranks}"
            b.add(case, ["eva", *MONTHLY_POT, *periods, *EC_EARTH, b.folder(case) / "out.nc"], nranks)
    case = "covariate-at"
    b.add(case, ["eva", "-v", "tas", "--method", "gev", "--min-blocks", "5", "--covariate", "year",
                 "--covariate-at", "1850", "1900", "--return-period", "2", "10", *EC_EARTH, b.folder(case) / "out.nc"])


@pytest.mark.parametrize("nranks", RANKS)
def test_list_options_end_at_the_first_file(runs: Batch, nranks: int | None) -> None:
    """`--return-period 5 20 IN... OUT` reads as `--return-period 5,20 IN... OUT`: the files are not swallowed."""
    outs = []
    for name in ("comma", "words"):
        result = runs.result(f"periods-{name}-{nranks}")
        assert result.returncode == 0, result.stderr
        outs.append(values(runs.folder(f"periods-{name}-{nranks}") / "out.nc"))
    assert list(outs[0]["period"]) == [5.0, 20.0]
    assert outs[0].keys() == outs[1].keys()
    for name in outs[0]:
        assert np.array_equal(outs[0][name], outs[1][name], equal_nan=True), name
    result = runs.result("covariate-at")
    assert result.returncode == 0, result.stderr
    written = values(runs.folder("covariate-at") / "out.nc")
    assert list(written["covariate"]) == [1850.0, 1900.0] and list(written["period"]) == [2.0, 10.0]


# -- unknown and abbreviated options -----------------------------------------------------------------------------

TYPOS = [
    (["--ret", "20"], "--ret", "did you mean --return-period?"),
    (["--retrun-period", "20"], "--retrun-period", "did you mean --return-period?"),
    (["--covariate-a", "2000"], "--covariate-a", "did you mean --covariate-at?"),
]


@prepare
def prepare_typos(b: Batch) -> None:
    for k, (args, _, _) in enumerate(TYPOS):
        b.add(f"typo-{k}", ["eva", *MONTHLY_POT, *args, EC_EARTH[0], b.folder(f"typo-{k}") / "out.nc"])
    b.add("typo-subset", ["subset", "--overwrit", EC_EARTH[0], b.folder("typo-subset") / "out.nc"], 2)


@pytest.mark.parametrize("k", range(len(TYPOS)))
def test_unknown_option_names_the_commands_help_and_the_nearest_option(runs: Batch, k: int) -> None:
    """No option is taken by its prefix; a typo names eva's help (not climio's) and the option meant, in one line."""
    _, given, hint = TYPOS[k]
    result = runs.result(f"typo-{k}")
    line = one_error_line(result, given, hint)  # type: ignore[arg-type]
    assert line.startswith("climio: error: unrecognized arguments") and line.endswith("; see 'climio eva --help'")
    assert result.stderr == line + "\n"
    assert os.listdir(runs.folder(f"typo-{k}")) == []


def test_unknown_option_under_mpiexec(runs: Batch) -> None:
    result = runs.result("typo-subset")
    line = one_error_line(result, "--overwrit", "did you mean --overwrite?")  # type: ignore[arg-type]
    assert result.stderr == line + "\n" and line.endswith("; see 'climio subset --help'")  # rank 0 alone


def test_top_level_help_is_written_for_users() -> None:
    from climio.cli import build_parser

    text = build_parser().format_help()
    for command in ("info", "gen", "eva", "subset", "bench"):
        assert f"    {command} " in text
    assert "examples:" in text and "exit status" in text
    assert "argument parsing" not in text and "``" not in text  # not the module's docstring


def test_option_help_says_what_the_option_does() -> None:
    """eva's help: --covariate serves both methods, --plot draws the longest return period, list options show both
    spellings; gen's --mode lists every storage mode."""
    from climio.cli import build_parser
    from climio.core.ncio.modes import MODES

    parser = build_parser()
    eva = parser.parse_args(["eva", "a.nc", "b.nc"]).parser.format_help().replace("\n", " ")
    eva = " ".join(eva.split())
    assert "gev: the location is linear in it" in eva and "pot: the log of the GPD scale is" in eva
    assert "longest return period" in eva and "100-year" not in eva
    assert "e.g. 20,100 or 20 100" in eva
    gen = " ".join(parser.parse_args(["gen", "cmip", "x.nc"]).parser.format_help().split())
    assert f"storage mode: {', '.join(MODES)}" in gen and "seed 0" not in gen


# -- inputs out of time order ------------------------------------------------------------------------------------

@prepare
def prepare_time_order(b: Batch) -> None:
    for nranks in RANKS:
        b.add(f"subset-shuffled-{nranks}", ["subset", *SHUFFLED, b.folder(f"subset-shuffled-{nranks}") / "out.nc"],
              nranks)
        b.add(f"eva-shuffled-{nranks}", ["eva", *MONTHLY_POT, *SHUFFLED, b.folder(f"eva-shuffled-{nranks}") / "o.nc"],
              nranks)
        b.add(f"eva-ordered-{nranks}", ["eva", *MONTHLY_POT, *EC_EARTH, b.folder(f"eva-ordered-{nranks}") / "o.nc"],
              nranks)
    b.add("overlap", ["subset", EC_EARTH[1], EC_EARTH[0], EC_EARTH[1], b.folder("overlap") / "out.nc"])


@pytest.mark.parametrize("nranks", RANKS)
def test_inputs_out_of_time_order_are_sorted(runs: Batch, nranks: int | None, tmp_path: Path) -> None:
    """As cdo mergetime: the files are joined in the order of their times, with one note saying so; the result
    equals ncrcat's join of the files in order, and eva's fits equal those of the ordered inputs."""
    result = runs.result(f"subset-shuffled-{nranks}")
    assert result.returncode == 0, result.stderr
    notes = [line for line in result.stderr.splitlines() if "out of time order" in line]
    assert notes == [f"climio: note: inputs given out of time order; joined as {', '.join(EC_EARTH)}"]
    subprocess.run(["ncrcat", "-O", *EC_EARTH, str(tmp_path / "ref.nc")], check=True)
    ours, ref = values(runs.folder(f"subset-shuffled-{nranks}") / "out.nc"), values(tmp_path / "ref.nc")
    assert ours.keys() == ref.keys()
    for name in ref:
        assert np.array_equal(ours[name], ref[name]), name
    shuffled, ordered = runs.result(f"eva-shuffled-{nranks}"), runs.result(f"eva-ordered-{nranks}")
    assert shuffled.returncode == 0 and ordered.returncode == 0, shuffled.stderr + ordered.stderr
    assert "out of time order" in shuffled.stderr and "out of time order" not in ordered.stderr
    a, b = (values(runs.folder(f"eva-{k}-{nranks}") / "o.nc") for k in ("shuffled", "ordered"))
    for name in b:
        assert np.array_equal(a[name], b[name], equal_nan=True), name


def test_overlapping_inputs_stay_an_error(runs: Batch) -> None:
    one_error_line(runs.result("overlap"), "overlaps", EC_EARTH[1])  # type: ignore[arg-type]
    assert leftovers(str(runs.folder("overlap"))) == [] and os.listdir(runs.folder("overlap")) == []


# -- output names --------------------------------------------------------------------------------------------------

SUFFIXES = [
    (["subset", "IN", "out.zarr"], ("output", "out.zarr", "Zarr", ".nc")),
    (["subset", "IN", "out.grib2"], ("out.grib2", "GRIB")),
    (["subset", "IN", "out.h5"], ("out.h5", "classic netCDF", "--mode hdf5")),
    (["eva", *MONTHLY_POT, "--plot", "map.txt", "IN", "out.nc"], ("--plot", "map.txt", ".png")),
    (["gen", "cmip", "--shape", "3,2,2", "out.zarr"], ("out.zarr", "Zarr")),
]


@prepare
def prepare_suffixes(b: Batch) -> None:
    for nranks in RANKS:
        for k, (argv, _) in enumerate(SUFFIXES):
            folder = b.folder(f"suffix-{k}-{nranks}")
            b.add(f"suffix-{k}-{nranks}", [EC_EARTH[0] if a == "IN" else folder / a if a.startswith(("out.", "map."))
                                           else a for a in argv], nranks)
        b.add(f"h5-{nranks}", ["subset", "--mode", "hdf5", EC_EARTH[0], b.folder(f"h5-{nranks}") / "out.h5"], nranks)
    b.add("pdf", ["eva", *MONTHLY_POT, "--plot", b.folder("pdf") / "map.pdf", *EC_EARTH, b.folder("pdf") / "out.nc"])


@pytest.mark.parametrize("nranks", RANKS)
@pytest.mark.parametrize("k", range(len(SUFFIXES)))
def test_output_named_as_another_format_is_refused(runs: Batch, k: int, nranks: int | None) -> None:
    one_error_line(runs.result(f"suffix-{k}-{nranks}"), *SUFFIXES[k][1])  # type: ignore[arg-type]
    assert os.listdir(runs.folder(f"suffix-{k}-{nranks}")) == []


@pytest.mark.parametrize("nranks", RANKS)
def test_hdf5_suffix_for_a_netcdf4_output(runs: Batch, nranks: int | None) -> None:
    result = runs.result(f"h5-{nranks}")
    assert result.returncode == 0, result.stderr
    with netCDF4.Dataset(runs.folder(f"h5-{nranks}") / "out.h5") as ds:
        assert ds.data_model == "NETCDF4"


# -- exit status on a signal ---------------------------------------------------------------------------------------

STOP = """
import signal, sys
from climio.core import stops
from climio.core import targets
outputs = sys.argv[1:]
targets.declare(outputs)
for path in outputs[:{done}]:
    open(path, "w").write("complete")
    targets.published(path)
stops.stop_on_signal(signal.SIGINT, None)
print("finishing")
"""


@pytest.mark.parametrize("done", [1, 2])
def test_a_signal_leaves_all_outputs_or_none(tmp_path: Path, done: int) -> None:
    """Stopped with every output in place, a command finishes (status 0, outputs kept); stopped before the last
    one, it removes those it completed and exits 128 + signal: the status says what happened to the output."""
    outputs = [str(tmp_path / "out.nc"), str(tmp_path / "map.png")]
    result = subprocess.run([sys.executable, "-c", STOP.format(done=done), *outputs], capture_output=True, text=True,
                            timeout=60)
    if done == 2:
        assert result.returncode == 0 and result.stdout == "finishing\n", result.stderr
        assert sorted(os.listdir(tmp_path)) == ["map.png", "out.nc"]
    else:
        assert result.returncode == 128 + signal.SIGINT and "finishing" not in result.stdout
        assert result.stderr.startswith("climio: stopped by SIGINT; unfinished output removed (and ")
        assert os.listdir(tmp_path) == []


def started_importing(pid: int) -> None:
    """Wait until the command imports numpy: climio's entry point has then set its stop handlers (before that, a
    signal meets the interpreter's own start-up, which no Python program controls). Until the exec, the process
    is a fork of this one, numpy and all: its command line tells them apart."""
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            proc = Path(f"/proc/{pid}")
            if b"climio" in (proc / "cmdline").read_bytes() and "numpy" in (proc / "maps").read_text():
                return
        except OSError:
            return  # it has already ended
        time.sleep(0.01)


def test_interrupted_eva_exit_status_matches_its_output(tmp_path: Path) -> None:
    """Ctrl-C at several moments of a real run: either status 0 with the output and its 'wrote' line, or 130 with
    no output, no temporary and no 'wrote' line."""
    seen = set()
    for k, delay in enumerate((0.0, 0.5, 1.2, 2.0, 3.5)):
        out = tmp_path / f"e{k}.nc"
        process = subprocess.Popen(climio_argv("eva", *MONTHLY_POT, *EC_EARTH, str(out)), stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        started_importing(process.pid)
        time.sleep(delay)
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=120)
        assert "Traceback" not in stderr
        if process.returncode == 0:
            assert out.exists() and stdout.startswith(f"wrote {out}")
        else:
            assert process.returncode == 128 + signal.SIGINT, stderr
            assert not out.exists() and "wrote" not in stdout and "climio: stopped by SIGINT" in stderr
        seen.add(process.returncode)
    assert leftovers(str(tmp_path)) == []
    assert 130 in seen  # the early signals stopped it


def test_the_maps_suffix_chooses_its_format(runs: Batch) -> None:
    result = runs.result("pdf")
    assert result.returncode == 0, result.stderr
    assert (runs.folder("pdf") / "map.pdf").read_bytes()[:5] == b"%PDF-"
