"""climio's commands: each module adds its own parser and options to ``climio`` (``register``) and runs the
command (the ``func`` it sets); :mod:`climio.cli` only asks each to add itself, in the order ``climio --help``
lists them, then parses and maps errors to exit codes."""

from climio.commands import bench, eva, gen, info, serve, subset, tune

COMMANDS = (info, gen, eva, subset, serve, bench, tune)

DESCRIPTION = """netCDF climate data on one process or many (mpiexec -n N climio ...): cut subsets out of files
as ncks and ncrcat do, fit extreme value distributions at every grid cell, and write and read
domain-decomposed model fields. Every command takes -h."""

EXAMPLES = """examples:
  climio info                                         what this installation can read and write
  climio subset -v tas -b 60,35,30,-15 IN.nc OUT.nc   a variable in a lat/lon box (north,south,east,west)
  climio subset -d time,2000-01-01,2009-12-31 IN1.nc IN2.nc OUT.nc
                                                      join files along time, keep one decade
  climio eva --return-period 20,100 IN.nc OUT.nc      20- and 100-year return levels at every cell
  mpiexec -n 4 climio eva --method gev --ci 0.95 IN.nc OUT.nc
                                                      GEV fits with 95% intervals on 4 ranks
exit status: 0 the output is complete; 2 bad input (nothing written); 1 a run-time fault (nothing
written); 128+N stopped by signal N (nothing written; under mpiexec, the launcher's status, 1 for
Open MPI): see docs/usage.md."""
