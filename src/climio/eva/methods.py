"""The methods of ``climio eva`` and of :mod:`climio.eva.api`, behind one protocol (:class:`Method`):

* ``pot``: peaks over a per-cell quantile threshold, GPD fit to the excesses (:mod:`climio.eva.pot`);
* ``gev``: maxima of blocks of the time axis (years or a season), GEV fit (:mod:`climio.eva.block_maxima`).

A method declares its own options and checks them (once, in the command's words, for the command and the API
alike), reads what it needs of the time axis (values per year, or the blocks), samples each cell's series (its
largest values, or its blocks' maxima), fits its distribution (found by name in
:mod:`climio.eva.distributions`, the fit with a trend too) and describes its results in CF
(:mod:`climio.eva.cf`). Every method produces per-cell parameters, return levels for the requested periods (in
years), ``nll`` and ``status``, in the same CF form; the job, the API, the output file and the plot ask the
method object, never its name.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from climio.errors import ClimioError
from climio.eva import block_maxima, blocks, cf, covariate, distributions, largest, pot, timestep
from climio.eva.distributions import Distribution
from climio.eva.intervals import Request

PER_PERIOD = ("return_level", "return_level_lower", "return_level_upper")  # results with the period dimension
Result = pot.Result | pot.TrendResult | block_maxima.Result | block_maxima.TrendResult
Scanner = largest.Scanner | block_maxima.Scanner
Settings = Mapping[str, Any]  # the options by job.Options' field names (the API's keywords)


@dataclass(frozen=True)
class Option:
    """One of a method's own options: its name (a field of ``job.Options``, a keyword of the API) and the command's
    flag for it."""

    name: str
    flag: str


@dataclass(frozen=True)
class TimeAxis:
    """What a method may need of the analysed time axis, and how its errors name it (the command and the API say
    where differently)."""

    step: float | None  # the median step in days (None: unknown)
    calendar: str  # the calendar of npy='calendar'
    dates: tuple[np.ndarray, str, str] | None  # the times as numbers, their CF units and calendar; None: no dates
    where: str  # the time coordinate, as an npy error names it
    source: str  # the variable, as a trend's error names it
    npy_option: str  # the npy option's spelling
    no_blocks: str  # the error where blocks need dates (and two steps) the axis has not
    no_years: str  # the error where each value's year needs dates the axis has not


class Reading(Protocol):
    """How a method's sampler gets the cells' series: the job's parallel reads, or the API's array in memory."""

    length: int  # time steps
    cells: int
    dtype: np.dtype
    missing: Sequence[float]  # values that mean missing besides NaN

    def largest(self, k: int, times: bool) -> largest.Scanner:
        """Each cell's ``k`` largest values (with ``times``, their time steps) over the whole series."""

    def feed(self, update: Callable[[np.ndarray], None]) -> None:
        """Call ``update`` with every (steps, cells) block of the series, in time order."""


@dataclass(frozen=True)
class Method(ABC):
    name: str
    distribution: str  # the name in climio.eva.distributions
    title: str  # the output's title says "<title> of <var>"
    said: str  # the command's summary line says "wrote OUT: <said> of <var> ..."
    description: str  # the output's global 'method' attribute
    results: Mapping[str, str]  # result variable -> netCDF type; those in PER_PERIOD have the period dimension
    statuses: tuple[str, ...]  # the status variable's flag meanings, by value
    options: tuple[Option, ...]  # its own options, in the order errors list them
    only: str  # what an error says of its options when another method is chosen
    fewest: Option  # the option of the smallest sample fitted (the fit with a trend needs more)

    def family(self) -> Distribution:
        """Its distribution, from the registry."""
        return distributions.get(self.distribution)

    def outputs(self, ci: Request | None, declustered: bool = False, trend: bool = False) -> dict[str, str]:
        """The result variables and their types; with ``--ci`` the interval ends and standard errors too, with
        ``--decluster`` the clusters' count and the extremal index; with ``--covariate`` (a trend: the GEV
        location, the GPD log scale) the intercept and slope of the parameter that moves in its place, the
        stationary fit's -log L, the likelihood-ratio test's p-value and the standard errors (always)."""
        out = dict(self.results)
        parameters = self.family().parameters(trend)
        if trend:
            module = self.family().with_trend()
            out = {}
            for name, dtype in self.results.items():  # the parameter that moves becomes its two coefficients
                out.update({p: "f8" for p in module.COEFFICIENTS} if name == module.MOVES else {name: dtype})
            out.update({"nll_stationary": "f8", "trend_p_value": "f8", **{f"{p}_se": "f8" for p in parameters}})
        if declustered:
            out.update({"n_clusters": "i4", "extremal_index": "f8"})
        if ci is not None:
            out.update({"return_level_lower": "f8", "return_level_upper": "f8",
                        **{f"{p}_se": "f8" for p in parameters}})
        return out

    @abstractmethod
    def check(self, settings: Settings) -> None:
        """Refuse bad values of its own options (the command's words; the same verdict on every rank)."""

    def check_trend(self, settings: Settings, ci: Request | None, at: Sequence[float]) -> None:
        """Refuse the options a fit with a trend cannot take: too small a sample, profile intervals, covariate
        values that are not finite."""
        fewest = settings[self.fewest.name]
        if fewest < block_maxima.TREND_MIN_BLOCKS:
            raise ClimioError(f"{self.fewest.flag} must be at least {block_maxima.TREND_MIN_BLOCKS} with --covariate, "
                              f"got {fewest}", collective=True)
        if ci is not None and ci.method != "normal":  # the only intervals of effective return levels
            raise ClimioError("--ci with --covariate: give --ci-method normal (profile intervals of effective "
                              "return levels are not available)", collective=True)
        if not all(math.isfinite(v) for v in at):
            raise ClimioError(f"--covariate-at: give finite numbers, got {list(at)}", collective=True)

    @abstractmethod
    def timing(self, settings: Settings, axis: TimeAxis) -> Any:
        """What it needs of the time axis to sample and fit (values per year, or the blocks)."""

    @abstractmethod
    def trend(self, cov: covariate.Covariate, timing: Any, settings: Settings, axis: TimeAxis) -> covariate.Trend:
        """The covariate of each value it fits and the covariate values of the effective return levels."""

    @abstractmethod
    def scan(self, reading: Reading, timing: Any, settings: Settings, trend: covariate.Trend | None) -> Scanner:
        """What each cell keeps of its series as it streams past."""

    @abstractmethod
    def analyse(self, scanner: Scanner, timing: Any, settings: Settings, ci: Request | None,
                trend: covariate.Trend | None, progress: Callable[[int], None] | None = None) -> Result:
        """The fits, return levels (and with ``ci`` their intervals) of the cells the scanner has seen."""

    @abstractmethod
    def attributes(self, var: str, attrs: Mapping[str, object], settings: Settings,
                   trend: tuple[str, str] | None) -> dict[str, dict[str, object]]:
        """CF attributes of its result variables (``trend``: the covariate's long name and units)."""

    @abstractmethod
    def settings_record(self, settings: Settings, timing: Any) -> dict[str, object]:
        """Its options that shaped the results, as global attributes of the output."""

    def seasons(self, timing: Any) -> tuple[str, ...]:
        """The seasons fitted each on its own, when there are several (a leading ``season`` axis)."""
        return ()

    @abstractmethod
    def plot_text(self, settings: Settings) -> str:
        """The method as a map's title says it."""

    @abstractmethod
    def record_years(self, result: Result, timing: Any) -> np.ndarray:
        """Each cell's years of data behind its fit (a map marks return periods far beyond them)."""

    def described(self, var: str, attrs: Mapping[str, object], settings: Settings,
                  trend: tuple[str, str] | None, ci: Request | None) -> dict[str, dict[str, object]]:
        """CF attributes of every result variable, the intervals' and standard errors' too with ``ci``."""
        out = self.attributes(var, attrs, settings, trend)
        if ci is not None:
            out.update(cf.interval_attributes(out, self.distribution, self.family().parameters(trend is not None),
                                              ci.level, ci.method))
        return out

    def record(self, settings: Settings, timing: Any, covariate_spec: str | None,
               ci: Request | None) -> dict[str, object]:
        """The options that shaped the results, as global attributes of the output."""
        trend = {} if covariate_spec is None else {"climio_covariate": covariate_spec}
        intervals = {} if ci is None else {"climio_ci_level": ci.level, "climio_ci_method": ci.method}
        return {**self.settings_record(settings, timing), **trend, **intervals}


@dataclass(frozen=True)
class PeaksOverThreshold(Method):
    """Each cell's values over its ``1 - tail`` quantile; their excesses fitted (runs-declustered with
    ``decluster``), the rate of exceedance from the values per year."""

    def check(self, settings: Settings) -> None:
        tail, min_exceed = settings["tail"], settings["min_exceed"]
        if not 0.0 < tail < 0.5:
            raise ClimioError(f"--tail must be inside (0, 0.5), got {tail}", collective=True)
        if min_exceed < 1:
            raise ClimioError(f"--min-exceed must be at least 1, got {min_exceed}", collective=True)
        timestep.check_npy(settings["npy"])

    def timing(self, settings: Settings, axis: TimeAxis) -> float:
        """The values per year of the return-level arithmetic."""
        return timestep.values_per_year(settings["npy"], axis.step, axis.calendar, axis.where,
                                        option=axis.npy_option)

    def trend(self, cov: covariate.Covariate, timing: Any, settings: Settings, axis: TimeAxis) -> covariate.Trend:
        if axis.dates is None:
            raise ClimioError(axis.no_years, collective=True)
        import cftime

        years = np.array([d.year for d in cftime.num2date(*axis.dates)])
        return pot.trend(cov, years, settings["covariate_at"])

    def scan(self, reading: Reading, timing: Any, settings: Settings, trend: covariate.Trend | None
             ) -> largest.Scanner:
        timed = settings.get("decluster") is not None or trend is not None  # both need each value's time step
        return reading.largest(pot.tail_capacity(reading.length, settings["tail"]), timed)

    def analyse(self, scanner: Scanner, timing: Any, settings: Settings, ci: Request | None,
                trend: covariate.Trend | None, progress: Callable[[int], None] | None = None) -> Result:
        assert isinstance(scanner, largest.Scanner)
        return pot.from_scanner(scanner, tail=settings["tail"], periods=settings["periods"], npy=timing,
                                min_exceed=settings["min_exceed"], progress=progress, ci=ci,
                                run=settings.get("decluster"), trend=trend, distribution=self.distribution)

    def attributes(self, var: str, attrs: Mapping[str, object], settings: Settings,
                   trend: tuple[str, str] | None) -> dict[str, dict[str, object]]:
        return cf.result_attributes(var, attrs, settings["tail"], settings.get("decluster"), trend)

    def settings_record(self, settings: Settings, timing: Any) -> dict[str, object]:
        run = settings.get("decluster")
        return {"climio_tail": float(settings["tail"]), "climio_npy": timing,
                "climio_min_exceed": np.int32(settings["min_exceed"]),
                **({} if run is None else {"climio_decluster": f"runs:{run}"})}

    def plot_text(self, settings: Settings) -> str:
        run = settings.get("decluster")
        runs = f", runs declustered (r = {run})" if run is not None else ""
        return f"GPD over threshold (each cell's {100.0 * (1.0 - settings['tail']):g}th percentile{runs})"

    def record_years(self, result: Result, timing: Any) -> np.ndarray:
        """Its valid values over the values per year (the rate is the fitted peaks per valid value)."""
        assert isinstance(result, (pot.Result, pot.TrendResult))
        peaks = result.n_exceed if result.n_clusters is None else result.n_clusters
        with np.errstate(divide="ignore", invalid="ignore"):
            return peaks / result.rate / timing


@dataclass(frozen=True)
class BlockMaxima(Method):
    """Each cell's maxima of the blocks (years, or seasons) that miss at most ``max_missing`` of their time
    steps, fitted when there are ``min_blocks``."""

    def check(self, settings: Settings) -> None:
        blocks.seasons_of(settings["block"])
        max_missing, min_blocks = settings["max_missing"], settings["min_blocks"]
        if not 0.0 <= max_missing < 1.0:
            raise ClimioError(f"--max-missing must be in [0, 1), got {max_missing}", collective=True)
        if isinstance(min_blocks, bool) or not isinstance(min_blocks, (int, np.integer)) or min_blocks < 2:
            raise ClimioError(f"--min-blocks must be at least 2, got {min_blocks}", collective=True)

    def timing(self, settings: Settings, axis: TimeAxis) -> blocks.Blocks:
        """The blocks of the analysed time steps, from the dates and their calendar."""
        if axis.dates is None or axis.step is None or not axis.step > 0:
            raise ClimioError(axis.no_blocks, collective=True)
        return blocks.of_axis(*axis.dates, axis.step, settings["block"])

    def trend(self, cov: covariate.Covariate, timing: Any, settings: Settings, axis: TimeAxis) -> covariate.Trend:
        return block_maxima.trend(cov, timing, settings["max_missing"], settings["covariate_at"], axis.source)

    def scan(self, reading: Reading, timing: Any, settings: Settings, trend: covariate.Trend | None
             ) -> block_maxima.Scanner:
        scanner = block_maxima.Scanner(timing, reading.cells, reading.dtype, reading.missing)
        reading.feed(scanner.update)
        return scanner

    def analyse(self, scanner: Scanner, timing: Any, settings: Settings, ci: Request | None,
                trend: covariate.Trend | None, progress: Callable[[int], None] | None = None) -> Result:
        assert isinstance(scanner, block_maxima.Scanner)
        return block_maxima.analyse(scanner, periods=settings["periods"], max_missing=settings["max_missing"],
                                    min_blocks=int(settings["min_blocks"]), progress=progress, ci=ci, trend=trend,
                                    distribution=self.distribution)

    def attributes(self, var: str, attrs: Mapping[str, object], settings: Settings,
                   trend: tuple[str, str] | None) -> dict[str, dict[str, object]]:
        return cf.block_maxima_attributes(var, attrs, blocks.canonical(settings["block"]), settings["max_missing"],
                                          trend)

    def settings_record(self, settings: Settings, timing: Any) -> dict[str, object]:
        return {"climio_block": blocks.canonical(settings["block"]),
                "climio_max_missing": float(settings["max_missing"]),
                "climio_min_blocks": np.int32(settings["min_blocks"])}

    def seasons(self, timing: Any) -> tuple[str, ...]:
        return timing.seasons if len(timing.seasons) > 1 else ()

    def plot_text(self, settings: Settings) -> str:
        spec = blocks.canonical(settings["block"])
        return f"GEV of block maxima ({'annual' if spec == 'year' else spec} blocks)"

    def record_years(self, result: Result, timing: Any) -> np.ndarray:
        """Its complete blocks (one a year)."""
        assert isinstance(result, (block_maxima.Result, block_maxima.TrendResult))
        return result.n_blocks.astype(float)


METHODS: dict[str, Method] = {method.name: method for method in (
    PeaksOverThreshold(
        "pot", "gpd", "peaks-over-threshold GPD fits", "GPD fits",
        "threshold: R type-7 quantile; GPD maximum likelihood with shape >= -1 (profile likelihood, global search); "
        "return level u + s/k((T npy rate)^k - 1)", cf.RESULT_TYPES, cf.STATUS_MEANINGS,
        (Option("tail", "--tail"), Option("min_exceed", "--min-exceed"), Option("npy", "--npy"),
         Option("decluster", "--decluster")),
        "for peaks over threshold only (--method pot); block maxima take --block, --max-missing and --min-blocks",
        Option("min_exceed", "--min-exceed")),
    BlockMaxima(
        "gev", "gev", "block-maxima GEV fits", "GEV fits of block maxima",
        "block maxima of the complete blocks; GEV maximum likelihood with shape >= -1 (profile likelihood over the "
        "shape, global search); return level m + s/k((-log(1-1/T))^-k - 1)", cf.BLOCK_RESULT_TYPES,
        cf.BLOCK_STATUS_MEANINGS,
        (Option("block", "--block"), Option("max_missing", "--max-missing"), Option("min_blocks", "--min-blocks")),
        "for block maxima only: add --method gev", Option("min_blocks", "--min-blocks")),
)}
