"""Which variables of a file are its data: one rule for ``climio eva`` (a file's only data variable needs no
``--var``) and the xarray API (a Dataset's needs no ``var=``).

CF (section 1.3 and chapters 4, 5, 7) gives every other variable a role that another variable names: a
coordinate variable (1-D, named as its dimension), an auxiliary coordinate (``coordinates``), cell bounds
(``bounds``, ``climatology``), a grid mapping (``grid_mapping``), a cell measure (``cell_measures``), a term
of a parametric vertical coordinate (``formula_terms``) or an ancillary variable (``ancillary_variables``);
UGRID names a mesh's topology (``mesh``), its coordinates and its connectivity tables likewise.
What is left is data: ``time_bnds``, ``lat_bnds`` or ``rotated_pole`` never is.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from climio.errors import ClimioError

# The attributes by which a variable names others in a role that is not data: CF's, then UGRID's (a data
# variable's ``mesh``, and the mesh topology's coordinates and connectivities).
ROLES = ("coordinates", "bounds", "climatology", "grid_mapping", "cell_measures", "formula_terms",
         "ancillary_variables", "mesh", "node_coordinates", "edge_coordinates", "face_coordinates",
         "volume_coordinates", "edge_node_connectivity", "face_node_connectivity", "face_edge_connectivity",
         "face_face_connectivity", "edge_face_connectivity", "boundary_node_connectivity",
         "volume_node_connectivity", "volume_edge_connectivity", "volume_face_connectivity",
         "volume_volume_connectivity")

Declared = Mapping[str, tuple[Sequence[str], Mapping[str, object]]]  # name -> (dimensions, attributes)


def names_in(value: object) -> list[str]:
    """The variable names in a CF reference attribute: ``"a b"``, or ``"key: a key2: b"`` (``formula_terms``,
    ``cell_measures``, grid_mapping's extended form): the words that do not end in ':'."""
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    return [w for w in text.split() if not w.endswith(":")]


def referenced(variables: Declared) -> set[str]:
    """The variables that another one names in one of CF's ``ROLES``."""
    return {n for _, attrs in variables.values() for key in ROLES if key in attrs for n in names_in(attrs[key])}


def data_variables(variables: Declared, coordinates: Collection[str] = ()) -> list[str]:
    """The data variables among ``variables`` (name -> (dimensions, attributes)), in their order: neither a
    coordinate variable, nor one of ``coordinates`` (those known otherwise: an xarray Dataset's coords), nor named
    by another variable in one of the ``ROLES``, nor one with a ``cf_role`` (a mesh topology, a station's or
    trajectory's identifier)."""
    roles = referenced(variables) | set(coordinates)
    return [name for name, (dims, attrs) in variables.items()
            if name not in roles and tuple(dims) != (name,) and "cf_role" not in attrs]


def only_data_variable(variables: Declared, where: str, option: str, coordinates: Collection[str] = ()) -> str:
    """The one data variable of ``variables`` (see :func:`data_variables`); a ClimioError naming ``where`` and
    asking for ``option`` (``var=``, ``--var``) when there are none or several."""
    found = data_variables(variables, coordinates)
    if len(found) == 1:
        return found[0]
    if not found:
        raise ClimioError(f"{where} has no data variable (every variable is a coordinate, bounds, grid mapping or "
                          f"other variable that another one names): give {option}", collective=True)
    names = ", ".join(repr(n) for n in found)
    raise ClimioError(f"{where} has {len(found)} data variables ({names}): give {option} to choose one",
                      collective=True)
