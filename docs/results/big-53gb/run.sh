#!/bin/bash
# The issue-19 runs on a field larger than memory: 12775 x 720 x 1440 float32 (53 GB) on the 24 GiB VM.
set -e
cd /tmp/big
source /work/main/.venv/bin/activate
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
cold() { sync; echo 3 > /proc/sys/vm/drop_caches; }
t() { local s=$(date +%s.%N); "$@"; echo "  wall $(echo "$(date +%s.%N) - $s" | bc) s: $*"; }
echo "== gen"; t mpiexec -n 2 climio --trace gen.json gen cmip pr53.nc --shape 12775,720,1440 --mode cdf5 -O
ls -l pr53.nc; free -g | head -2
for rep in 1 2; do
  echo "== dd cold ($rep)"; cold; t dd if=pr53.nc of=/dev/null bs=64M
  echo "== eva cold ($rep)"; cold; t mpiexec -n 2 climio --trace eva$rep.json eva pr53.nc eva$rep.nc -O
done
echo "== eva halves (cold)"; cold
t mpiexec -n 2 climio --trace evaS.json eva pr53.nc evaS.nc -d lat,0,359 -O
t mpiexec -n 2 climio --trace evaN.json eva pr53.nc evaN.nc -d lat,360,719 -O
echo "== subset MJO box (cold)"; cold
t mpiexec -n 2 climio --trace sub.json subset -v pr -d lat,-20.,20. -d lon,90.,160. pr53.nc mjo.nc -O
echo "== ncks MJO box (cold)"; cold
t ncks -O -v pr -d lat,-20.,20. -d lon,90.,160. pr53.nc mjo-ncks.nc
echo done
