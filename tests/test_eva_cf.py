"""climio eva's output is CF-1.8 on every real file it accepts: ``cfchecks`` (offline tables, see
tests/helpers/cfcheck.py) finds no ERROR in it, and no ERROR or WARN that the inputs do not have
themselves. Files eva cannot analyse are refused with one line.

Monthly and one-step files need ``--npy 12``; with one step no cell can be fitted, and the output
must still be valid CF (all fit results missing, status flags set).

The command's runs, accepted and refused, are made once in one 2-rank process (``helpers/eva_batch.py``: one
start-up for all of them, each run in a directory of its own); each test checks its own runs' outcomes and files.
"""

from __future__ import annotations

import glob
import os
import sys

import netCDF4
import pytest
from conftest import one_error_line

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "helpers"))
import cfcheck  # noqa: E402
from eva_batch import Runs  # noqa: E402

REAL = os.path.join(os.path.dirname(__file__), "data", "real")


def real(pattern: str) -> list[str]:
    found = sorted(glob.glob(os.path.join(REAL, pattern)))
    assert found, pattern
    return found


# case -> (inputs, options)
ACCEPTED = {
    "cordex-pr-joined": (real("pr_NAM-22_*_day_*.nc"), []),
    "cesm2-tas-daily": (real("tas_day_CESM2-WACCM_*.nc"), ["-v", "tas"]),
    "ec-earth-joined-monthly": (real("tas_Amon_EC-EARTH_*.nc"), ["-v", "tas", "--npy", "12"]),
    "icon-points": (real("tas_Amon_ICON-ESM-LR_*.nc"), ["-v", "tas", "--npy", "12"]),
    "cordex-eur11-height": (real("tas_EUR-11_*.nc"), ["-v", "tas", "--npy", "12"]),
    "o3-all-levels": (real("o3_AERmon_*.nc"), ["-v", "o3", "--npy", "12"]),
    "o3-one-level": (real("o3_AERmon_*.nc"), ["-v", "o3", "--npy", "12", "-d", "lev,0"]),
    "msftmz-sector": (real("msftmz_Omon_*.nc"), ["-v", "msftmz", "--npy", "12"]),
}


REFUSED = [
    (real("outCSne30_vortex.nc"), ["-v", "psi"], ["psi", "no time dimension"]),
    (real("fesom.mesh.diag.nc"), ["-v", "nod_area"], ["nod_area", "no time dimension"]),
    (real("tas_Amon_ICON-ESM-LR_*.nc"), ["-v", "tas"], ["'time'", "--npy"]),
    (real("tas_day_CESM2-WACCM_*.nc"), ["-v", "pr"], ["no variable 'pr'", "tas"]),
]


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Runs, dict[object, str]]:
    """Every run of this file, accepted and refused, at 2 ranks: (their outcomes, each run's output path)."""
    directory = tmp_path_factory.mktemp("eva-cf")
    runs = Runs(directory / "runs", timeout=300)
    outs: dict[object, str] = {}
    for case, (inputs, options) in ACCEPTED.items():
        outs[case] = str(directory / f"{case}.nc")
        runs.add(case, "eva", *inputs, outs[case], *options, nranks=2)
    for n, (inputs, options, _) in enumerate(REFUSED):
        outs[("refused", n)] = str(runs.case_dir() / "out.nc")
        runs.add(("refused", n), "eva", *inputs, outs[("refused", n)], *options, nranks=2)
    return runs.run(), outs


@pytest.fixture(scope="module")
def outputs(made: tuple[Runs, dict[object, str]]) -> dict[str, str]:
    runs, outs = made
    for case in ACCEPTED:
        assert runs[case].returncode == 0, (case, runs[case].stderr)
    return {case: outs[case] for case in ACCEPTED}


def test_no_cf_error_and_nothing_introduced(outputs: dict[str, str]) -> None:
    """One cfchecks run over every output and every input (cfchecks takes a while to start: one run instead of
    one per case); what an output introduces is found as ``cfcheck.introduced`` finds it."""
    inputs = [path for case in outputs for path in ACCEPTED[case][0]]
    reports = cfcheck.cf_reports([*outputs.values(), *inputs], timeout=300)
    for case, out in outputs.items():
        assert reports[out].errors == [], (case, reports[out].lines())
        known = {m.key() for path in ACCEPTED[case][0] for m in reports[path].messages}
        assert [str(m) for m in reports[out].messages if m.key() not in known] == [], case


def test_every_result_variable_says_what_it_is(outputs: dict[str, str]) -> None:
    """units, long_name and cell_methods on every result; the input's quantity on threshold and return level."""
    for case, out in outputs.items():
        inputs, options = ACCEPTED[case]
        name = options[options.index("-v") + 1] if "-v" in options else "pr"
        with netCDF4.Dataset(inputs[0]) as src, netCDF4.Dataset(out) as ds:
            source = src[name]
            for var in ("threshold", "scale", "shape", "rate", "n_exceed", "return_level", "nll"):
                attrs = ds[var].__dict__
                assert attrs["units"], (case, var)
                assert attrs["long_name"], (case, var)
                assert attrs["cell_methods"].endswith(")") and "time: point (comment:" in attrs["cell_methods"]
                if "cell_methods" in source.ncattrs():
                    assert attrs["cell_methods"].startswith(source.cell_methods), (case, var)
            for var in ("threshold", "return_level"):
                assert ds[var].units == source.units, case
                assert ds[var].standard_name == source.standard_name, case
            assert ds["shape"].units == "1"
            assert ds.Conventions == "CF-1.8"
            assert ds.history.splitlines()[0].split(": ", 1)[1].startswith("climio eva ")
            for key in ("source_id", "experiment_id", "variant_label", "institution", "driving_model_id"):
                if key in src.ncattrs():
                    assert ds.getncattr(key) == src.getncattr(key), (case, key)
            assert "tracking_id" not in ds.ncattrs()


@pytest.mark.parametrize("inputs, options, needles", REFUSED,
                         ids=["no-time", "mesh-without-time", "one-step-no-npy", "no-such-variable"])
def test_refused_with_one_line(made: tuple[Runs, dict[object, str]], inputs: list[str], options: list[str],
                               needles: list[str]) -> None:
    runs, outs = made
    key = ("refused", REFUSED.index((inputs, options, needles)))
    one_error_line(runs[key], *needles)
    assert not os.path.exists(outs[key])
