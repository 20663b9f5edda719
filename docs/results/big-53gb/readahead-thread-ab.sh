#!/bin/bash
# A/B on the 53 GB field: read-ahead advised from the computing thread (old, HEAD) or from a background thread (new).
cd /tmp/big
source /work/main/.venv/bin/activate
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
cold() { sync; echo 3 > /proc/sys/vm/drop_caches; }
for rep in 1 2; do
  cold; s=$(date +%s.%N); dd if=pr53.nc of=/dev/null bs=64M 2>/dev/null; echo "dd $rep $(echo "$(date +%s.%N) - $s" | bc)"
  for v in new old; do
    if [ $v = old ]; then X="-x PYTHONPATH=/tmp/old/src"; else X=""; fi
    cold; s=$(date +%s.%N); mpiexec -n 2 $X python -m climio --trace ab-$v$rep.json eva pr53.nc ab-$v.nc -O >/dev/null
    echo "$v $rep $(echo "$(date +%s.%N) - $s" | bc)"
  done
done
echo done
