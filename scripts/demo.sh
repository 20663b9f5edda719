#!/usr/bin/env bash
# `make demo`: the foundation job on the default dataset, on 2 ranks.
#   1. what this machine can do (climio info);
#   2. the default CMIP-size field (12775 x 192 x 288 days x lat x lon, 2.8 GB) written in
#      parallel (cdf5), read back in parallel and summarised;
#   3. extreme value analysis of it: GPD fits and 20/100-year return levels at every cell, with maps;
#   4. model output: the CMAQ mock-up (California domain, 1 step) with each write strategy;
#   5. one year of it in all four storage modes: the files must hold identical values;
#   6. subsetting: the MJO box (20N..20S, 90E..160E) out of the default dataset, checked against ncks, and the
#      same box out of a level-6 geodesic grid and the real MPAS mesh, keeping whole cells.
set -euo pipefail
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
climio=.venv/bin/climio
out=demo-output
ranks=${DEMO_RANKS:-2}
mkdir -p "$out"

echo "== climio info ($ranks ranks)"
mpiexec -n "$ranks" "$climio" info

echo
echo "== default dataset: climio gen cmip $out/pr_day.nc (mode cdf5, $ranks ranks)"
mpiexec -n "$ranks" "$climio" --trace "$out/gen-trace.json" gen cmip "$out/pr_day.nc" --mode cdf5 --overwrite
mpiexec -n "$ranks" .venv/bin/python scripts/demo_summary.py "$out/pr_day.nc"

echo
echo "== extreme value analysis: climio eva $out/pr_day.nc $out/eva.nc ($ranks ranks)"
mpiexec -n "$ranks" "$climio" eva "$out/pr_day.nc" "$out/eva.nc" --return-period 20 100 \
    --plot "$out/eva_map.png" --overwrite
.venv/bin/python - "$out/eva.nc" <<'PY'
import sys
import netCDF4
import numpy as np
with netCDF4.Dataset(sys.argv[1]) as ds:
    ds.set_auto_mask(False)
    rl = ds["return_level"][1] * 86400.0
    xi = ds["shape"][:]
    print(f"  100-year return level: median {np.nanmedian(rl):.0f} mm/day, range {np.nanmin(rl):.0f}-{np.nanmax(rl):.0f}; "
          f"GPD shape median {np.nanmedian(xi):.3f} (the generator's tails: 0.05-0.20); maps in {sys.argv[1][:-3]}_map.png")
PY

echo
echo "== model output: CMAQ mock-up, CA domain 89x134x35x146, 1 step, $ranks ranks, every file read back and compared"
"$climio" bench model --domain CA --grid "${ranks}x1" --steps 1 --reps 1 --strategy root,direct,rows,cols,agg,stripe --verify \
    --mode serial,cdf5 --out "$out/model" | grep -E "^\| (grid|[0-9])"

echo
echo "== one year in each storage mode"
for mode in serial hdf5 cdf2 cdf5; do
    mpiexec -n "$ranks" "$climio" gen cmip "$out/pr_1yr_$mode.nc" --shape 365,192,288 --mode "$mode" --overwrite
done
.venv/bin/python - "$out" <<'PY'
import hashlib, sys
import netCDF4
out = sys.argv[1]
digests = {}
for mode in ("serial", "hdf5", "cdf2", "cdf5"):
    with netCDF4.Dataset(f"{out}/pr_1yr_{mode}.nc") as ds:
        ds.set_auto_mask(False)
        digests[mode] = (hashlib.sha256(ds["pr"][:].tobytes()).hexdigest()[:16], ds.file_format)
for mode, (digest, fmt) in digests.items():
    print(f"  {mode:<7} {fmt:<21} sha256(pr) {digest}")
same = len({d for d, _ in digests.values()}) == 1
print("  all four modes hold identical values" if same else "  MODES DIFFER")
sys.exit(0 if same else 1)
PY
echo
echo "== subset: the MJO box out of the default dataset ($ranks ranks), checked against ncks"
mpiexec -n "$ranks" "$climio" subset -v pr -d lat,-20.,20. -d lon,90.,160. "$out/pr_day.nc" "$out/pr_mjo.nc" --overwrite
ncks -O -v pr -d lat,-20.,20. -d lon,90.,160. "$out/pr_day.nc" "$out/pr_mjo_ncks.nc"
.venv/bin/python - "$out/pr_mjo.nc" "$out/pr_mjo_ncks.nc" <<'PY'
import sys
import netCDF4
import numpy as np
a, b = (netCDF4.Dataset(p) for p in sys.argv[1:])
same = all(np.array_equal(a[v][:], b[v][:]) for v in ("pr", "lat", "lon", "time"))
print(f"  pr{a['pr'].shape}: {'identical to ncks' if same else 'DIFFERS FROM NCKS'}")
sys.exit(0 if same else 1)
PY

echo
echo "== subset: the same box out of a level-6 geodesic grid (40962 cells) and the MPAS QU 1920-km mesh"
mpiexec -n "$ranks" "$climio" gen geodesic "$out/geodesic6.nc" --level 6 --layers 25 --times 4 --overwrite
mpiexec -n "$ranks" "$climio" subset -b 20,-20,160,90 "$out/geodesic6.nc" "$out/geodesic6_mjo.nc" --overwrite
mpiexec -n "$ranks" "$climio" subset -b 20,-20,160,90 tests/data/meshes/mesh.QU.1920km.151026.nc \
    "$out/mpas_mjo.nc" --overwrite
echo
echo "demo done: files in $out/, phase trace in $out/gen-trace.json"
