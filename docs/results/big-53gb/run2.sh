#!/bin/bash
# Re-run of the 53 GB cold eva after the sample read-ahead (fcc3068) with the prefetch phase traced.
set -e
cd /tmp/big
source /work/main/.venv/bin/activate
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
cold() { sync; echo 3 > /proc/sys/vm/drop_caches; }
t() { local s=$(date +%s.%N); "$@"; echo "  wall $(echo "$(date +%s.%N) - $s" | bc) s: $*"; }
echo "== gen"; t mpiexec -n 2 climio gen cmip pr53.nc --shape 12775,720,1440 --mode cdf5 -O
for rep in 1 2; do
  echo "== dd cold ($rep)"; cold; t dd if=pr53.nc of=/dev/null bs=64M
  echo "== eva cold ($rep)"; cold; t mpiexec -n 2 climio --trace eva-r$rep.json eva pr53.nc eva-r$rep.nc -O
done
echo done
