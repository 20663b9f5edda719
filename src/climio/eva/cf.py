"""What eva's results say about themselves in CF: one place for the command's netCDF output and the xarray API.

Every result variable has ``units`` (``1`` where dimensionless) and a ``long_name``;
those in the input's physical quantity (threshold, return levels) keep its
``standard_name``; every statistic over time gets a ``cell_methods`` entry appended
to the input's (CF 7.3: methods are listed in the order they were applied), so
``time: mean`` daily means become ``time: mean time: point (comment: ...)``. CF has
no method name for a quantile or a fitted parameter, so the entry is ``point`` with
a comment that says what was computed.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

STATUS_MEANINGS = ("ok", "no_valid_data", "constant_series", "no_exceedances", "too_few_exceedances",
                   "shape_at_lower_bound", "shape_at_upper_bound")
BLOCK_STATUS_MEANINGS = ("ok", "no_valid_data", "constant_maxima", "too_few_blocks", "shape_at_lower_bound",
                         "shape_at_upper_bound")
RESULT_TYPES = {"threshold": "f8", "scale": "f8", "shape": "f8", "rate": "f8", "n_exceed": "i4",
                "return_level": "f8", "nll": "f8", "status": "i1"}
BLOCK_RESULT_TYPES = {"location": "f8", "scale": "f8", "shape": "f8", "n_blocks": "i4", "return_level": "f8",
                      "nll": "f8", "status": "i1"}
# The input's attributes that describe its physical quantity: copied to results in the same quantity.
SAME_QUANTITY = ("units", "standard_name")


def _text(value: object) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def result_attributes(var: str, attrs: Mapping[str, object], tail: float, run: int | None = None,
                      covariate: tuple[str, str] | None = None) -> dict[str, dict[str, object]]:
    """CF attributes of each result variable of a POT/GPD analysis of variable ``var`` with attributes ``attrs``
    (``run``: declustered by runs of that length; ``covariate``, its long name and units: the GPD's log scale
    linear in it)."""
    units = _text(attrs.get("units", "1")) or "1"
    quantity = {"units": units}
    if "standard_name" in attrs:
        quantity["standard_name"] = _text(attrs["standard_name"])
    before = _text(attrs.get("cell_methods", "")).strip()
    quantile = f"{1 - tail:g} quantile"  # no parentheses: cell_methods puts its comment in them

    def over_time(comment: str) -> dict[str, object]:
        return {"cell_methods": f"{before} time: point (comment: {comment})".strip()}

    pot = f"peaks over the {quantile}, GPD maximum likelihood"
    declustered: dict[str, dict[str, object]] = {}
    if run is not None:
        runs = f"runs declustering, run length {run}"
        pot = f"cluster maxima over the {quantile} ({runs}), GPD maximum likelihood"
        declustered = {
            "rate": {"long_name": f"clusters of values of {var} over the threshold per valid value", "units": "1",
                     **over_time(f"clusters per valid value, {runs}")},
            "n_clusters": {"long_name": f"number of clusters of values of {var} over the threshold", "units": "1",
                           **over_time(f"count of clusters, {runs}")},
            "extremal_index": {"long_name": f"extremal index of the values of {var} over the threshold",
                               "units": "1", **over_time("Ferro and Segers intervals estimator")},
        }
    out = {
        "threshold": {"long_name": f"{quantile} of {var} over time", **quantity,
                      **over_time(f"{quantile} of the valid values, R type 7")},
        "scale": {"long_name": f"GPD scale of the excesses of {var} over the threshold", "units": units,
                  **over_time(pot)},
        "shape": {"long_name": f"GPD shape of the excesses of {var} over the threshold", "units": "1",
                  **over_time(pot)},
        "rate": {"long_name": f"fraction of valid values of {var} over the threshold", "units": "1",
                 **over_time("exceedances per valid value")},
        "n_exceed": {"long_name": f"number of values of {var} over the threshold", "units": "1",
                     **over_time("count of exceedances")},
        "return_level": {"long_name": f"return level of {var}", **quantity, **over_time(pot)},
        "nll": {"long_name": "negative log-likelihood of the GPD fit to the excesses", "units": "1",
                **over_time(pot)},
        "status": {"long_name": "fit status", "flag_values": np.arange(len(STATUS_MEANINGS), dtype="i1"),
                   "flag_meanings": " ".join(STATUS_MEANINGS)},
        **declustered,
    }
    if covariate is None:
        return out
    name, cov_units = covariate
    trend = f"{pot}, log scale linear in the covariate ({name})"
    per = f"{cov_units}-1" if cov_units.isalpha() else f"1/({cov_units})"
    coefficients = {
        "log_scale_intercept": {"long_name": f"natural logarithm of the GPD scale (in {units}) of the excesses of {var} "
                                             f"over the threshold where the covariate ({name}) is 0", "units": "1"},
        "log_scale_slope": {"long_name": f"change of the natural logarithm of the GPD scale of the excesses of {var} "
                                         f"per unit of the covariate ({name})", "units": per},
    }
    return _with_trend(out, "scale", coefficients, "gpd", var, over_time(trend), over_time(pot),
                       "negative log-likelihood of the GPD fit to the excesses without the covariate")


def block_maxima_attributes(var: str, attrs: Mapping[str, object], block: str, max_missing: float,
                            covariate: tuple[str, str] | None = None) -> dict[str, dict[str, object]]:
    """CF attributes of each result variable of a GEV fit to the ``block`` maxima of ``var``; with ``covariate``
    (its long name and units), of the fit whose location is linear in it, with its standard errors."""
    units = _text(attrs.get("units", "1")) or "1"
    quantity = {"units": units}
    if "standard_name" in attrs:
        quantity["standard_name"] = _text(attrs["standard_name"])
    before = _text(attrs.get("cell_methods", "")).strip()
    blocks = "annual" if block == "year" else f"{block} seasonal" if "," not in block else "seasonal"
    fit = f"{blocks} maxima, GEV maximum likelihood"

    def over_time(comment: str) -> dict[str, object]:
        return {"cell_methods": f"{before} time: maximum (comment: {blocks} maxima) time: point (comment: "
                                f"{comment})".strip()}

    out = {
        "location": {"long_name": f"GEV location of the {blocks} maxima of {var}", **quantity, **over_time(fit)},
        "scale": {"long_name": f"GEV scale of the {blocks} maxima of {var}", "units": units, **over_time(fit)},
        "shape": {"long_name": f"GEV shape of the {blocks} maxima of {var}", "units": "1", **over_time(fit)},
        "n_blocks": {"long_name": f"number of {blocks} maxima of {var} fitted (blocks missing at most "
                                  f"{max_missing:g} of their time steps)", "units": "1",
                     **over_time("count of complete blocks")},
        "return_level": {"long_name": f"return level of {var}", **quantity, **over_time(fit)},
        "nll": {"long_name": "negative log-likelihood of the GEV fit to the block maxima", "units": "1",
                **over_time(fit)},
        "status": {"long_name": "fit status", "flag_values": np.arange(len(BLOCK_STATUS_MEANINGS), dtype="i1"),
                   "flag_meanings": " ".join(BLOCK_STATUS_MEANINGS)},
    }
    if covariate is None:
        return out
    name, cov_units = covariate
    trend = f"{blocks} maxima, GEV maximum likelihood, location linear in the covariate ({name})"
    per = f"{units} {cov_units}-1" if cov_units.isalpha() and " " not in units else f"({units})/({cov_units})"
    location = out["location"]
    coefficients = {
        "location_intercept": {**location, "long_name": f"{location['long_name']} where the covariate ({name}) is 0"},
        "location_slope": {"long_name": f"change of the GEV location of the {blocks} maxima of {var} per unit of the "
                                        f"covariate ({name})", "units": per},
    }
    return _with_trend(out, "location", coefficients, "gev", var, over_time(trend), over_time(fit),
                       "negative log-likelihood of the GEV fit to the block maxima without the covariate")


def _with_trend(out: dict[str, dict[str, object]], moves: str, coefficients: Mapping[str, dict[str, object]],
                distribution: str, var: str, trend: Mapping[str, object], stationary: Mapping[str, object],
                stationary_name: str) -> dict[str, dict[str, object]]:
    """The attributes of a fit with a trend from the stationary fit's ``out``: the parameter that ``moves``
    replaced by its ``coefficients``, the stationary fit's -log L, the p-value, effective return levels, and
    the standard errors of every parameter; ``trend`` and ``stationary`` are each fit's cell_methods."""
    new: dict[str, dict[str, object]] = {}
    for key, attrs in out.items():
        if key == moves:
            new.update({k: {**v, **trend} for k, v in coefficients.items()})
        else:
            new[key] = attrs
    for key in ("scale", "shape", "nll"):
        if key in new:
            new[key] = {**new[key], **trend}
    new["return_level"] = {**new["return_level"], "long_name": f"effective return level of {var} at the covariate "
                                                                f"value", **trend}
    new["nll_stationary"] = {"long_name": stationary_name, "units": "1", **stationary}
    new["trend_p_value"] = {"long_name": f"p-value of the likelihood-ratio test of the {moves}'s trend (chi-square, "
                                         f"1 degree of freedom)", "units": "1", **trend}
    parameters = tuple(k for k in new if k in coefficients or k in ("scale", "shape"))
    new.update(standard_error_attributes(new, distribution, parameters))
    return new


def covariate_attributes(name: str, units: str) -> dict[str, object]:
    """The ``covariate`` coordinate's attributes: the values of the covariate of the effective return levels."""
    return {"long_name": f"covariate value of the effective return levels: {name}", "units": units}


def _noted(attrs: Mapping[str, object], note: str) -> dict[str, object]:
    """``attrs``' cell_methods with ``note`` added to its last comment."""
    methods = str(attrs.get("cell_methods", ""))
    if methods.endswith(")"):
        methods = f"{methods[:-1]}; {note})"
    return {"cell_methods": methods} if methods else {}


def standard_error_attributes(results: Mapping[str, Mapping[str, object]], distribution: str,
                              parameters: tuple[str, ...]) -> dict[str, dict[str, object]]:
    """CF attributes of the parameters' standard errors, from their estimates' ``results`` attributes."""
    return {f"{name}_se": {"long_name": f"standard error of the {results[name]['long_name']}",
                           "units": results[name]["units"],
                           **_noted(results[name], f"{distribution.upper()} standard error from the observed "
                                                   f"information")}
            for name in parameters}


CI_METHOD_NAMES = {"normal": "normal-approximation (delta method)", "profile": "profile-likelihood"}


def interval_attributes(results: Mapping[str, Mapping[str, object]], distribution: str,
                        parameters: tuple[str, ...], level: float, method: str) -> dict[str, dict[str, object]]:
    """CF attributes of the interval ends and standard errors, from the point estimates' own ``results``
    attributes: the same units and time statistic, the comment saying which interval and level."""
    interval = f"{level * 100:g}% {CI_METHOD_NAMES[method]} confidence interval"
    level_attrs = results["return_level"]
    out: dict[str, dict[str, object]] = {}
    for end in ("lower", "upper"):
        out[f"return_level_{end}"] = {"long_name": f"{end} end of the {interval} of the {level_attrs['long_name']}",
                                      "units": level_attrs["units"],
                                      **_noted(level_attrs, f"{end} end of the {interval}")}
    out.update(standard_error_attributes(results, distribution, parameters))
    return out


PERIOD_ATTRS = {"long_name": "return period", "units": "years"}
SEASON_ATTRS = {"long_name": "season whose block maxima were fitted (month initials)"}
